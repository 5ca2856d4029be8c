"""A Recorder in one process for the argument tests: an agent over MCP's in-memory transport, an
``echo`` tool server that keeps every call it receives, and the journal-aware chain server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.tools import Tool, ToolResult
from pydantic import PrivateAttr
from support import chain_server

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.export import export_run
from hatp_journal.recorder.gateway import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore, verify_record
from hatp_journal.toolkit import SigningKey

POLICY = {"autonomy": {"compensate": "allow", "read": "allow", "none": "allow", "unknown": "allow"}}
EMBEDDED = "http://127.0.0.1:9/embedded-in-this-process"


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

    @property
    def run(self) -> str:
        assert self.recorder.run_id is not None
        return self.recorder.run_id

    @property
    def received(self) -> list[dict[str, Any]]:
        """Every call the echo server received."""
        return self.echo._received

    def chain_values(self) -> dict[str, str]:
        """The chain server's keys and values: what its calls really did."""
        return chain_server.values(self.chain_db)

    def entries(self) -> list[Entry]:
        return self.store.entries(self.run)

    def verifies(self) -> bool:
        """The exported Run Record verifies against the Recorder's pinned key."""
        key = self.store.public_key
        exported = export_run(self.store, self.run).to_bytes()  # with the servers' pinned keys
        return verify_record(exported, recorder_keys={key.kid: key}).ok


@asynccontextmanager
async def opened(tmp_path: Path, **limits: int) -> AsyncIterator[World]:
    """The world, with ``limits`` (``max_arguments_bytes``, ``max_journal_bytes``) in ``[recorder]``."""
    echo = Echo(name="echo", parameters={"type": "object"})
    echo_server = FastMCP("echo")
    echo_server.add_tool(echo)
    chain, journal = chain_server.build(tmp_path / "chain.db", SigningKey.generate())
    config = RecorderConfig(
        recorder=RecorderSection(agent="bot", principal="human://acme.com/dana", **limits),
        servers={"echo": ServerConfig(url=EMBEDDED), "chain": ServerConfig(url=EMBEDDED)},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(
        config,
        store=store,
        policy=Policy.model_validate(POLICY),
        embedded={"echo": echo_server, "chain": chain},
    )
    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            async with Client(mcp) as agent:
                yield World(agent, recorder, store, echo, tmp_path / "chain.db")
            recorder.close()
    finally:
        store.dispose()
        journal.engine.dispose()
