"""A Recorder in one process for the argument tests: an agent over MCP's in-memory transport, an
``echo`` tool server that keeps every call it receives, and the journal-aware chain server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.tools import Tool, ToolResult
from pydantic import PrivateAttr
from support import chain_server

from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.testing import RecorderWorld, recorder_world
from hatp_journal.toolkit import SigningKey

POLICY = {"autonomy": {"compensate": "allow", "read": "allow", "none": "allow", "unknown": "allow"}}


class Echo(Tool):
    """Takes any arguments and keeps them: what the tool server received."""

    _received: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Keep the call and answer ``ok``."""
        self._received.append(arguments)
        return ToolResult(content="ok")


@dataclass
class World:
    agent: Client[Any]
    recorder: Recorder
    store: RunStore
    echo: Echo
    chain_db: Path
    recorded: RecorderWorld

    @property
    def run(self) -> str:
        return self.recorded.run

    @property
    def received(self) -> list[dict[str, Any]]:
        """Every call the echo server received."""
        return self.echo._received

    def chain_values(self) -> dict[str, str]:
        """The chain server's keys and values: what its calls really did."""
        return chain_server.values(self.chain_db)

    def entries(self) -> list[Entry]:
        return self.recorded.entries()

    def verifies(self) -> bool:
        """The exported Run Record verifies against the Recorder's pinned key."""
        return self.recorded.verifies()


@asynccontextmanager
async def opened(tmp_path: Path, **limits: int) -> AsyncIterator[World]:
    """The world, with ``limits`` (``max_arguments_bytes``, ``max_journal_bytes``) in ``[recorder]``."""
    echo = Echo(name="echo", parameters={"type": "object"})
    echo_server = FastMCP("echo")
    echo_server.add_tool(echo)
    chain, journal = chain_server.build(tmp_path / "chain.db", SigningKey.generate())
    servers = {"echo": echo_server, "chain": chain}
    try:
        async with recorder_world(tmp_path, servers, Policy.model_validate(POLICY), **limits) as world:
            yield World(world.agent, world.recorder, world.store, echo, tmp_path / "chain.db", world)
    finally:
        journal.engine.dispose()
