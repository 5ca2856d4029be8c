"""The Recorder's stdio front: tool calls on the data plane, everything else through the mcp library.

Each line from the agent is parsed once. A ``tools/call`` of a published tool, in the 2026
protocol era (its ``_meta`` names the version, so no session state is needed), goes straight to
:meth:`Recorder.answer` and its answer is written back as one JSON-RPC line; calls run
concurrently, each answered when its entry is durable. Every other message (discovery, the
legacy handshake, ``tools/list``, the binding tools, anything malformed) is handed to the
FastMCP server, which answers as it always has.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import stat
import sys
from collections import deque
from collections.abc import Callable
from typing import Any, cast, get_args

import anyio
import mcp_types
from fastmcp import FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import LOG_LEVEL_META_KEY, LoggingLevel, LoggingMessageNotificationParams

from hatp_journal.recorder.front.fast_calls import (
    FastCall,
    as_sent,
    as_sent_in_handshake_era,
    fast_call,
    modern,
)
from hatp_journal.recorder.front.jsonrpc_lines import (
    INVALID_REQUEST,
    Unreadable,
    Unusual,
    batch_answer,
    problem,
    read_line,
    request_id,
)
from hatp_journal.recorder.gateway import passthrough, relay
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.relay_rounds import declared_capabilities, request_rounds
from hatp_journal.recorder.runs.waiting import Progress

LINE_LIMIT = 64 * 1024 * 1024
"""Longest line read from the agent (a call's arguments are bounded later, with a clear refusal)."""

LIBRARY_BACKLOG = 64
"""Messages for the mcp library waiting to be taken before stdin is read no further."""

EOF_GRACE_SECONDS = 30.0
"""How long the mcp library may take, once stdin has closed, to answer the requests it was given
(listings, ``initialize``: quick ones; tool calls are the data plane's and are always waited for).
Any still unanswered then get an error."""

INTERNAL_ERROR = -32603

_LEVELS = frozenset(get_args(LoggingLevel))

logger = logging.getLogger(__name__)

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Made once: ``json.dumps`` with any option builds a new encoder on every call."""


async def serve_stdio(recorder: Recorder, mcp: FastMCP) -> None:
    """Serve the agent on this process's stdin and stdout until stdin closes."""
    if stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode):
        # A file is no pipe the event loop can watch: the library's transport reads it on a thread.
        await mcp.run_async(transport="stdio", show_banner=False)
        return
    wire_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    wire_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    # Stray reads and prints (ours or a library's) miss the wire: stdin is empty, stdout is stderr.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, sys.stdin.fileno())
    os.close(null)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    await serve_pipes(recorder, mcp, wire_in, wire_out)


async def serve_pipes(recorder: Recorder, mcp: FastMCP, wire_in: Any, wire_out: Any) -> None:
    """Serve the agent on two pipes (binary, unbuffered files) until ``wire_in`` closes."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire_out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    front = _Front(recorder, mcp, wire_in, writer)
    token = set_transport("stdio")
    try:
        async with mcp._lifespan_manager():
            await front.run()
    finally:
        reset_transport(token)
        writer.close()


class _Front:
    def __init__(self, recorder: Recorder, mcp: FastMCP, wire_in: Any, writer: asyncio.StreamWriter) -> None:
        self.recorder = recorder
        self.mcp = mcp
        self.wire_in = wire_in
        self.writer = writer
        self.stamp = mcp._mcp_server.server_info_stamp
        self.calls: set[asyncio.Task[None]] = set()
        self.library_pending: set[str | int] = set()  # ids of requests the library has yet to answer
        self.library_idle = asyncio.Event()
        self.library_idle.set()
        self.initialize_id: str | int | None = None  # the handshake era's initialize, until answered
        self.handshake = False  # the handshake era's initialize is answered: its calls are ours too
        self.log_level: LoggingLevel | None = None  # set by the agent's logging/setLevel (handshake era)
        self.capabilities: Any = None  # what the agent's client declared in its initialize (handshake era)
        self.relayed: dict[str, asyncio.Future[dict[str, Any]]] = {}  # our requests to the agent, by id
        self.relay_ids = itertools.count(1)

    async def run(self) -> None:
        to_library, library_in = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        library_out, from_library = anyio.create_memory_object_stream[SessionMessage](64)
        server = self.mcp._mcp_server

        async def serve() -> None:
            await server.run(library_in, library_out, server.create_initialization_options())

        async with anyio.create_task_group() as library:
            library.start_soon(serve)
            library.start_soon(self._answer_library, from_library)
            async with to_library:
                await self._read(to_library)
                for waiting in self.relayed.values():  # asked of the agent, never to be answered now
                    if not waiting.done():
                        waiting.set_exception(ConnectionError("the agent's client closed its input"))
                # Stdin closed: what was asked is still answered (the library ends its requests
                # at the end of its input, so that end waits for their answers).
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.library_idle.wait(), EOF_GRACE_SECONDS)
                if self.calls:
                    await asyncio.wait(self.calls)
            # Stdin closed and every call answered: the agent is gone, so is the library's server.
            library.cancel_scope.cancel()
        for unanswered in sorted(self.library_pending, key=repr):
            error = {"code": INTERNAL_ERROR, "message": "Internal error: not answered before stdin closed"}
            self._write({"jsonrpc": "2.0", "id": unanswered, "error": error})
        await _drained(self.writer)

    async def _read(self, to_library: Any) -> None:
        """Take each line from the agent until stdin closes; the library's messages go on in order."""
        lines = _Lines(self._take)
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: lines, self.wire_in)
        try:
            while True:
                await lines.more.wait()
                lines.more.clear()
                while lines.library:
                    await to_library.send(lines.library.popleft())
                    lines.resume_if_drained(transport)
                if lines.ended:
                    return
        finally:
            transport.close()

    def _take(self, line: bytes) -> Any:
        """Answer a data-plane call (in a task of its own) or what is no message the library reads;
        anything else is the library's: returned."""
        message = read_line(line)
        if message is None:  # a blank line
            return None
        if isinstance(message, Unreadable):
            self._write(message.answer())
            return None
        unusual = message.why if isinstance(message, Unusual) else None
        if isinstance(message, Unusual):
            message = message.message
        if isinstance(message, list):
            batch = batch_answer(message)
            if batch is not None:
                self._write(batch)
            return None
        if self._relay_answered(message):
            return None
        refusal = problem(message)
        if refusal is None:
            call = self._fast_call(message)
            if call is not None:
                # A plain task per call (an anyio task group costs more per task); _call never raises.
                task = asyncio.create_task(self._call(message["id"], *call, message["params"]))
                self.calls.add(task)
                task.add_done_callback(self.calls.discard)
                return None
            if unusual is not None:  # what the library's parser would not have read either
                refusal = Unreadable(INVALID_REQUEST, f"Invalid Request: {unusual}", request_id(message))
        library = _library_message(message) if refusal is None else None
        if isinstance(library, Exception):
            refusal = Unreadable(INVALID_REQUEST, "Invalid Request: not an MCP message", request_id(message))
        if refusal is not None:
            if not _notification(message):  # a notification is never answered, even a wrong one
                self._write(refusal.answer())
            return None
        self._library_takes(message)
        return library

    def _library_takes(self, message: dict[str, Any]) -> None:
        """Count a request the library will answer; a cancelled one it never answers."""
        if "method" not in message:
            return
        if "id" in message:
            self.library_pending.add(message["id"])
            self.library_idle.clear()
            if message["method"] == "initialize":
                self.initialize_id = message["id"]
                params = message.get("params")
                self.capabilities = params.get("capabilities") if isinstance(params, dict) else None
            elif message["method"] == "logging/setLevel":
                level = (message.get("params") or {}).get("level")
                self.log_level = level if level in _LEVELS else self.log_level
        elif message["method"] == "notifications/cancelled":
            params = message.get("params") or {}
            self._library_answered(params.get("requestId"))

    def _library_answered(self, answered: Any) -> None:
        if isinstance(answered, str | int):
            self.library_pending.discard(answered)
        if not self.library_pending:
            self.library_idle.set()

    def _fast_call(self, message: Any) -> FastCall | None:
        """(server, tool, arguments, request _meta) of a call the data plane answers, else None."""
        return fast_call(self.recorder.forwards, message, handshake=self.handshake)

    async def _call(
        self, request_id: Any, server: str, tool: str, arguments: dict[str, Any], meta: Any, params: Any
    ) -> None:
        era_2026 = modern(meta)
        progress = self._progress(meta)
        # The tool server's progress and log messages go on to the agent, as the library relays them.
        passthrough.progress_relay.set(cast(passthrough.ProgressRelay | None, progress))
        passthrough.log_relay.set(self._log_relay(meta, era_2026))
        relay.agent_peer.set(_StdioPeer(self, era_2026))
        try:
            if era_2026:  # what its server asks the agent comes back in rounds (relay_rounds.py)
                state, responses = request_rounds(params)
                result = await self.recorder.answer_in_rounds(
                    server,
                    tool,
                    arguments,
                    meta,
                    progress,
                    capabilities=declared_capabilities(meta),
                    state=state,
                    responses=responses,
                )
            else:
                result = await self.recorder.answer(server, tool, arguments, meta, progress)
        except Exception:
            logger.exception("the Recorder failed on %s_%s", server, tool)
            error = {"code": INTERNAL_ERROR, "message": "Internal error"}
            self._write({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        sent = as_sent(result, self.stamp) if era_2026 else as_sent_in_handshake_era(result)
        self._write({"jsonrpc": "2.0", "id": request_id, "result": sent})
        if self.writer.transport.get_write_buffer_size():  # else the pipe took it all: no wait
            await _drained(self.writer)

    def _relay_answered(self, message: Any) -> bool:
        """Whether ``message`` is the agent's answer to a request the Recorder relayed to it."""
        if not isinstance(message, dict) or "method" in message:
            return False
        answered = message.get("id")
        waiting = self.relayed.get(answered) if isinstance(answered, str) else None
        if waiting is None:
            return False
        if not waiting.done():
            waiting.set_result(message)
        return True

    def _log_relay(self, meta: Any, era_2026: bool) -> passthrough.LogRelay | None:
        """How a tool server's log messages reach the agent during a call, at the level it asked for.

        The 2026 era asks per request (``_meta``'s log level; none: no log messages), the handshake
        era per connection (``logging/setLevel``; none: the server's default, every level if unset).
        """
        if era_2026:
            asked = meta.get(LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
            if asked not in _LEVELS:
                return None
            lowest: LoggingLevel | None = asked
        else:
            lowest = self.log_level or self.mcp.client_log_level

        async def relay(message: LoggingMessageNotificationParams) -> None:
            if lowest is not None and passthrough.severity(message.level) < passthrough.severity(lowest):
                return
            params = message.model_dump(mode="json", by_alias=True, exclude_none=True)
            self._write({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
            await _drained(self.writer)

        return relay

    def _progress(self, meta: Any) -> Progress | None:
        """How to tell the agent a call is still waiting (only if it sent a ``progressToken``)."""
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is None:
            return None

        async def send(progress: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self._write({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
            await _drained(self.writer)

        return send

    def _write(self, message: dict[str, Any]) -> None:
        line = _encode(message) + "\n"
        if not self.writer.is_closing():
            self.writer.write(line.encode())

    async def _answer_library(self, from_library: Any) -> None:
        async with from_library:
            async for session_message in from_library:
                sent = session_message.message
                if not hasattr(sent, "method"):  # an answer, not a request or notification of its own
                    if sent.id == self.initialize_id and self.initialize_id is not None:
                        # The handshake is done (a failed one leaves calls to the library, as before).
                        self.handshake = self.handshake or isinstance(sent, mcp_types.JSONRPCResponse)
                    self._library_answered(sent.id)
                dumped = sent.model_dump_json(by_alias=True, exclude_unset=True)
                if not self.writer.is_closing():
                    self.writer.write(dumped.encode() + b"\n")
                    await self.writer.drain()


class _StdioPeer:
    """The agent's client on this stdio connection, as a tool server reaches it during a data-plane
    call (``recorder/gateway/relay.py``): a request line of ours, answered by the agent's response line."""

    def __init__(self, front: _Front, era_2026: bool) -> None:
        self.front = front
        self.era_2026 = era_2026

    def declares(self, method: str, params: dict[str, Any]) -> bool | None:
        return None if self.era_2026 else relay.declared(self.front.capabilities, method, params)

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        front = self.front
        request_id = f"hatp-relay-{next(front.relay_ids)}"  # the library's own ids are integers
        waiting = asyncio.get_running_loop().create_future()
        front.relayed[request_id] = waiting
        try:
            front._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            await _drained(front.writer)
            answer = await waiting
        finally:
            del front.relayed[request_id]
        error = answer.get("error")
        if isinstance(error, dict):
            raise MCPError.from_error_data(mcp_types.ErrorData.model_validate(error))
        result = answer.get("result")
        if not isinstance(result, dict):
            raise ValueError("an answer that is neither result nor error")
        return result


class _Lines(asyncio.Protocol):
    """The agent's stdin, cut into lines as its bytes arrive and each handed to ``take`` right there.

    No reader task in between: a call's task is started in the same turn of the event loop that
    read its line. What ``take`` returns (a message for the library) is queued for :meth:`_Front._read`,
    and stdin is not read further while more than ``LIBRARY_BACKLOG`` of them wait. A line over
    ``LINE_LIMIT`` ends the input, as the end of the pipe does (a last line without a newline
    is still taken).
    """

    def __init__(self, take: Callable[[bytes], Any]) -> None:
        self.take = take
        self.pending: list[bytes] = []  # the pieces of a line not yet ended
        self.pending_size = 0
        self.library: deque[Any] = deque()
        self.more = asyncio.Event()
        self.ended = False
        self.paused = False
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.ended:
            return
        if b"\n" not in data:  # a long line arriving in pieces: kept, joined once it is whole
            self.pending.append(data)
            self.pending_size += len(data)
            if self.pending_size >= LINE_LIMIT:
                self._end()
            return
        lines = data.split(b"\n")
        if self.pending:
            lines[0] = b"".join([*self.pending, lines[0]])
        last = lines.pop()
        self.pending, self.pending_size = ([last], len(last)) if last else ([], 0)
        for line in lines:
            if len(line) >= LINE_LIMIT:
                self._end()
                return
            self._line(line + b"\n")
        if self.pending_size >= LINE_LIMIT:
            self._end()

    def eof_received(self) -> bool:
        if not self.ended and self.pending:
            self._line(b"".join(self.pending))
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _line(self, line: bytes) -> None:
        try:
            message = self.take(line)
        except Exception:  # a bug in one line's handling loses that line, never the lines after it
            logger.exception("the Recorder could not take a line from the agent")
            return
        if message is not None:
            self.library.append(message)
            self.more.set()
            if len(self.library) > LIBRARY_BACKLOG and not self.paused:
                self.paused = True
                self.transport.pause_reading()

    def _end(self) -> None:
        self.ended, self.pending, self.pending_size = True, [], 0
        self.more.set()

    def resume_if_drained(self, transport: Any) -> None:
        if self.paused and len(self.library) <= LIBRARY_BACKLOG // 2 and not self.ended:
            self.paused = False
            transport.resume_reading()


def _library_message(message: Any) -> SessionMessage | Exception:
    """A message for the mcp library, validated as its own stdio transport would."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except ValueError as error:
        return error


def _notification(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("method"), str) and "id" not in message


async def _drained(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        await writer.drain()
