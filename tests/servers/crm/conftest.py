"""Fixtures: the CRM reached by a real MCP client, in memory (fast) or over stdio (as shipped)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.servers.crm import build
from hatp_journal.toolkit import Journal, SigningKey
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import META_KEY

CLI = ["-m", "hatp_journal.servers.crm.cli"]


@dataclass
class Reply:
    """One tool result: whether it is an error, its ``hatp/journal`` meta and its structured content."""

    error: bool
    journal: dict[str, Any]
    data: dict[str, Any]


class Crm:
    """A CRM server behind a real MCP client, with the calls these tests make."""

    def __init__(self, client: Client[Any], db: Path, journal: Journal | None = None) -> None:
        self.client, self.db, self.journal = client, db, journal

    async def call(self, tool: str, **arguments: Any) -> Reply:
        result = await self.client.call_tool_mcp(tool, arguments)
        meta = (result.meta or {}).get(META_KEY, {})
        return Reply(bool(result.is_error), meta, result.structured_content or {})

    async def deal(self, deal_id: str = "D-881") -> dict[str, Any]:
        reply = await self.call("get_deal", deal_id=deal_id)
        assert not reply.error, reply.journal
        return reply.data

    async def compensate(self, journal: dict[str, Any], **extra: Any) -> Reply:
        extra.setdefault("ifVersion", journal["effect"]["version"])
        return await self.call("hatp_journal_compensate", token=journal["compensationToken"], **extra)

    async def declarations(self) -> dict[str, dict[str, Any]]:
        return {tool.name: (tool.meta or {}).get(META_KEY, {}) for tool in await self.client.list_tools()}


@pytest.fixture
def clock() -> FakeClock:
    """The in-memory server's clock."""
    return FakeClock()


@pytest.fixture
async def crm(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Crm]:
    """A fresh, seeded CRM in memory."""
    db = tmp_path / "crm.db"
    mcp, journal = build(db, SigningKey.generate(), clock)
    async with Client(mcp) as client:
        yield Crm(client, db, journal)


@pytest.fixture
async def stdio_crm(tmp_path: Path) -> AsyncIterator[Crm]:
    """A fresh, seeded CRM started as ``hatp-crm serve`` over stdio."""
    db = tmp_path / "crm.db"
    arguments = [*CLI, "serve", "--db", str(db), "--key", str(tmp_path / "crm.key")]
    transport = StdioTransport(sys.executable, arguments, env=dict(os.environ), cwd=str(tmp_path))
    async with Client(transport) as client:
        yield Crm(client, db)


@pytest.fixture
async def replicas(postgres_url: str, tmp_path: Path) -> AsyncIterator[tuple[Crm, Crm]]:
    """Two ``hatp-crm serve`` processes on one store, sharing the server's signing key."""
    arguments = [*CLI, "serve", "--db", postgres_url, "--key", str(tmp_path / "crm.key")]
    async with AsyncExitStack() as stack:
        started = []
        for _ in range(2):  # one after the other: the first creates the key the second loads
            transport = StdioTransport(sys.executable, arguments, env=dict(os.environ), cwd=str(tmp_path))
            client = await stack.enter_async_context(Client(transport))
            started.append(Crm(client, tmp_path / "unused.db"))
        yield started[0], started[1]
