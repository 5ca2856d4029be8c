"""The Recorder's stdio front in this test's process, on two real pipes, and an agent on their other ends.

``stdio_front(recorder, mcp)`` runs :func:`~hatp_journal.recorder.front.stdio.serve_pipes` as
``hatp-recorder serve`` runs it on stdin and stdout. The agent writes raw lines (``wire.send``)
and reads every message the front wrote (``wire.received``); ``wire.sdk_session()`` is the mcp
SDK's own ``ClientSession`` over the same pipes, as a host speaks to the Recorder.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types
from fastmcp import FastMCP
from mcp import ClientSession
from mcp.shared.message import SessionMessage

from hatp_journal.recorder.front.stdio import serve_pipes
from hatp_journal.recorder.gateway.core import Recorder
from support.waiting import POLL_CAP, until_set


class Wire:
    """The agent's ends of the two pipes."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.received: list[Any] = []  # every message the front wrote, parsed, in order
        self.arrived = asyncio.Event()
        self.ended = asyncio.Event()  # the front closed its end
        self.to_session: Any = None  # where a ClientSession reads, once there is one

    def send(self, message: Any) -> None:
        """Write one line: a message (as JSON) or raw bytes (a newline is added)."""
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.writer.write(line + b"\n")

    def close(self) -> None:
        """End the agent's input, as an agent that exits does."""
        self.writer.close()

    def answers_to(self, request_id: Any) -> list[Any]:
        return [
            m
            for m in self.received
            if isinstance(m, dict) and m.get("id") == request_id and "method" not in m
        ]

    async def answer(self, request_id: Any) -> dict[str, Any]:
        """The front's answer to ``request_id``, once it is written."""
        for _ in range(POLL_CAP):  # each turn is a message the front wrote: only a hung test reaches the cap
            if found := self.answers_to(request_id):
                return found[0]  # type: ignore[no-any-return]
            if self.ended.is_set():
                raise AssertionError(f"the front ended without answering {request_id!r}")
            self.arrived.clear()
            await until_set(self.arrived, f"the front's answer to {request_id!r}")
        raise AssertionError(f"no answer to {request_id!r} among {POLL_CAP} messages")

    @asynccontextmanager
    async def sdk_session(self, **options: Any) -> AsyncIterator[ClientSession]:
        """The mcp SDK's ``ClientSession`` on these pipes (not yet initialized)."""
        session_in, session_read = anyio.create_memory_object_stream[SessionMessage | Exception](100)
        session_write, session_out = anyio.create_memory_object_stream[SessionMessage](100)
        self.to_session = session_in

        async def write() -> None:
            async for sent in session_out:
                self.send(sent.message.model_dump(mode="json", by_alias=True, exclude_unset=True))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write)
            async with ClientSession(session_read, session_write, **options) as session:
                yield session
            tasks.cancel_scope.cancel()


async def _read(reader: asyncio.StreamReader, wire: Wire) -> None:
    while line := await reader.readline():
        message = json.loads(line)
        wire.received.append(message)
        wire.arrived.set()
        if wire.to_session is not None and isinstance(message, dict):
            parsed = mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await wire.to_session.send(SessionMessage(parsed))
    wire.ended.set()
    wire.arrived.set()


@asynccontextmanager
async def stdio_front(recorder: Recorder, mcp: FastMCP) -> AsyncIterator[Wire]:
    """The front serving ``recorder`` on pipes; on leaving, the agent's input is closed and the
    front is waited for (it answers what it was asked first)."""
    loop = asyncio.get_running_loop()
    front_in, agent_out = os.pipe()
    agent_in, front_out = os.pipe()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(agent_out, "wb", buffering=0)
    )
    wire = Wire(asyncio.StreamWriter(transport, protocol, None, loop))
    reader = asyncio.StreamReader(limit=256 * 1024 * 1024)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(agent_in, "rb", buffering=0)
    )
    front_files = (os.fdopen(front_in, "rb", buffering=0), os.fdopen(front_out, "wb", buffering=0))
    serving = asyncio.create_task(serve_pipes(recorder, mcp, *front_files))
    reading = asyncio.create_task(_read(reader, wire))
    try:
        yield wire
    finally:
        if not wire.writer.is_closing():
            wire.close()
        await serving
        front_files[1].close()
        await reading
