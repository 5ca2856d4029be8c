"""A Recorder world for tests: the gateway with its tool servers in this process, and an agent.

``RecorderWorld.open(root, {"shop": mcp}, policy)`` starts a real :class:`Recorder` over a Run
Store in ``root``, each named FastMCP server embedded (reached over the MCP library's in-memory
transport, so no process starts), and connects an agent's MCP client to it. ``recorder_world``
is the same as an async context manager. See docs/recorder.md ("Testing with a Recorder world").
``make_org`` (from testing_org) writes an organisation whose servers are processes, for tests of undo.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig, WitnessConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore, verify_record
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.testing.org import (
    DANA,
    EVE,
    LEAD,
    LEE,
    POLICY,
    Capture,
    Org,
    Printed,
    mailing,
    make_org,
)
from hatp_journal.toolkit.signing import SigningKey

__all__ = [
    "DANA",
    "EMBEDDED_URL",
    "EVE",
    "LEAD",
    "LEE",
    "POLICY",
    "Capture",
    "Org",
    "Printed",
    "RecorderWorld",
    "mailing",
    "make_org",
    "recorder_world",
]

EMBEDDED_URL = "http://127.0.0.1:9/embedded-in-this-process"
"""The URL an embedded server is configured with: a placeholder, never dialled."""


@dataclass
class RecorderWorld:
    """A started Recorder, its Run Store and an agent connected to it; ``stack`` closes them all
    (enter more into it, e.g. the undo executor's servers, to have them closed too)."""

    agent: Client[Any]
    recorder: Recorder
    store: RunStore
    config: RecorderConfig
    stack: AsyncExitStack

    @classmethod
    async def open(
        cls,
        root: Path,
        servers: Mapping[str, FastMCP],
        policy: Policy,
        *,
        agent: str = "bot",
        principal: str = "human://acme.com/dana",
        clock: Callable[[], datetime] = utc_now,
        timeout_seconds: float = 30.0,
        witnesses: Sequence[WitnessConfig] = (),
        **recorder_options: Any,
    ) -> RecorderWorld:
        """Start the Recorder with ``servers`` embedded (each call to one may take ``timeout_seconds``)
        and a store in ``root/recorder.db``; ``recorder_options`` go to ``[recorder]``
        (e.g. ``max_arguments_bytes``); ``witnesses`` cosign its heads (docs/witness.md)."""
        config = RecorderConfig(
            recorder=RecorderSection(agent=agent, principal=principal, **recorder_options),
            servers={
                name: ServerConfig(url=EMBEDDED_URL, timeout_seconds=timeout_seconds) for name in servers
            },
            witnesses=list(witnesses),
        )
        store = RunStore(root / "recorder.db", SigningKey.generate(), clock=clock)
        recorder = Recorder(config, store=store, policy=policy, clock=clock, embedded=dict(servers))
        stack = AsyncExitStack()
        try:
            mcp = await recorder.start(stack)
            client = await stack.enter_async_context(Client(mcp))
        except BaseException:
            await stack.aclose()
            store.dispose()
            raise
        return cls(client, recorder, store, config, stack)

    async def close(self) -> None:
        """Disconnect the agent, close the run (its head is signed) and the store."""
        try:
            await self.stack.aclose()
            self.recorder.close()
        finally:
            self.store.dispose()

    @property
    def run(self) -> str:
        """The run the agent's calls are journaled in."""
        if self.recorder.run_id is None:
            raise RuntimeError("the Recorder has not opened its run")
        return self.recorder.run_id

    def entries(self) -> list[Entry]:
        """The run's entries as stored (none before the first call opens the run)."""
        return [] if self.recorder.run_id is None else self.store.entries(self.run)

    def verifies(self) -> bool:
        """Whether the exported Run Record verifies against the Recorder's own key."""
        key = self.store.public_key
        exported = export_run(self.store, self.run).to_bytes()  # with the servers' pinned keys
        return verify_record(exported, recorder_keys={key.kid: key}).ok


@asynccontextmanager
async def recorder_world(
    root: Path, servers: Mapping[str, FastMCP], policy: Policy, **options: Any
) -> AsyncIterator[RecorderWorld]:
    """:meth:`RecorderWorld.open` for the length of a block, closed after it."""
    world = await RecorderWorld.open(root, servers, policy, **options)
    try:
        yield world
    finally:
        await world.close()
