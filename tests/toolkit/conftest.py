"""Fixtures: the example server, reached by a real MCP client in memory or over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import example_server
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.toolkit import SigningKey

EXAMPLE = Path(__file__).parent / "example_server.py"


@pytest.fixture(params=["memory", "stdio"])
async def client(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Client[Any]]:
    """A real MCP client connected to the example server in memory or over stdio."""
    key_path = tmp_path / "server.key"
    SigningKey.generate().save(key_path)
    db = tmp_path / "example.db"
    if request.param == "memory":
        mcp, _ = example_server.build(db, SigningKey.from_file(key_path))
        connection: Client[Any] = Client(mcp)
    else:
        transport = StdioTransport(
            sys.executable,
            [str(EXAMPLE), "--db", str(db), "--key", str(key_path)],
            env=dict(os.environ),
            cwd=str(tmp_path),
        )
        connection = Client(transport)
    async with connection:
        yield connection
