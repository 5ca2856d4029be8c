"""A stdio tool server's JSON-RPC lines, shared by the mcp client session and the data plane.

The mcp library keeps the rare traffic (``server/discover`` or ``initialize``, ``tools/list``,
the key binding): its messages pass through here as they would through its own stdio client. A
hot request (``tools/call``) skips it: :meth:`ChildLink.request` writes the JSON-RPC message
itself and gets the response back parsed once, as plain JSON, by an id of its own (``hatp-N``),
so a call costs one ``json.dumps`` out and one ``json.loads`` back instead of two rounds of
pydantic models and a hop through the session's tasks.

The server's notifications for such a request are handed over here too, in the order of the lines,
so a progress or log message reaches its relay before the answer that follows it: progress by the
request's own ``progressToken``, log messages (which name no request) to ``on_log``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from fastmcp.client.transports.base import ClientTransport, SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.client.stdio import (
    _create_platform_compatible_process,
    _get_executable_command,
    _stop_server_process,
)
from mcp.shared.message import SessionMessage
from typing_extensions import Unpack

RAW_ID_PREFIX = "hatp-"
"""Ids of the requests the data plane sends; the session's own ids are integers."""


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Made once: ``json.dumps`` with any option builds a new encoder on every call."""

logger = logging.getLogger(__name__)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class LinkClosed(ConnectionError):
    """The server's process ended (or its pipe broke) before it answered."""


class ChildLink:
    """One server process and the lines on its stdin and stdout."""

    def __init__(self, process: Any) -> None:
        """``process``: as the mcp library spawns it (an anyio process with stdin and stdout pipes)."""
        self.process = process
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._to_session: Any = None  # where the session's messages go, once a session is open
        self._closed: BaseException | None = None
        self._progress: dict[str, Callable[..., Awaitable[None]]] = {}  # progressToken -> relay
        self.on_log: Callable[[dict[str, Any]], Awaitable[bool]] | None = None
        """Takes a ``notifications/message``'s params; False: not taken, the session gets it."""

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls, command: str, args: list[str], env: dict[str, str] | None, cwd: str | Path | None
    ) -> AsyncIterator[ChildLink]:
        """Start the server now (it boots while others do) and stop it on exit."""
        executable = await _get_executable_command(command)
        process = await _create_platform_compatible_process(executable, args, env, sys.stderr, cwd)
        async with cls.adopt(process) as link:
            yield link

    @classmethod
    @asynccontextmanager
    async def adopt(cls, process: Any) -> AsyncIterator[ChildLink]:
        """A link over a server process already started (``recorder/cli/boot.py``); stopped on exit."""
        link = cls(process)
        # A plain task, not a task group: an error in the caller's block stays that error.
        reading = asyncio.create_task(link._read())
        try:
            yield link
        finally:
            with anyio.CancelScope(shield=True):
                await _stop_server_process(process)
            reading.cancel()

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        progress: Callable[..., Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Send one request; its response message (``result`` or ``error``), as parsed JSON.

        ``progress``: called with (progress, total, message) for each of the server's progress
        notifications about this request (its ``_meta`` gets a ``progressToken`` of the link's own).
        Raises :class:`LinkClosed` if the server is gone, ``TimeoutError`` after ``timeout``.
        """
        if self._closed is not None:
            raise LinkClosed(f"the server's process has ended ({self._closed})")
        self._next += 1
        request_id = f"{RAW_ID_PREFIX}{self._next}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        if progress is not None:
            self._progress[request_id] = progress
            params = {**params, "_meta": {**params.get("_meta", {}), "progressToken": request_id}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            # asyncio's own timeout: the same bound for a fraction of an anyio cancel scope's cost.
            async with asyncio.timeout(timeout):
                await self._write(_encode(message))
                return await answer
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)

    async def _write(self, line: str) -> None:
        assert self.process.stdin is not None
        data = line.encode() + b"\n"
        stream = getattr(self.process.stdin, "_stream", None)
        try:
            # No lock: each line is written whole at once, so concurrent writers never interleave.
            if isinstance(stream, asyncio.StreamWriter) and not stream.is_closing():
                # Straight to anyio's own asyncio stream: its send() adds a turn of the event loop
                # after every write (a checkpoint), which a call's request does not need.
                stream.write(data)
                if stream.transport.get_write_buffer_size():  # else drain() would return at once
                    await stream.drain()
            else:
                await self.process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError) as error:
            raise LinkClosed(f"could not write to the server: {type(error).__name__}") from None

    async def _read(self) -> None:
        """Route each line: a data-plane answer to its waiter, anything else to the session."""
        assert self.process.stdout is not None
        buffer = b""
        try:
            async for chunk in self.process.stdout:
                lines = (buffer + chunk).split(b"\n")
                buffer = lines.pop()
                for line in lines:
                    if line.strip():
                        message = self._answer(line)
                        if message is not None and not await self._notified(message):
                            await self._route(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
            self._closed = error
        finally:
            self._closed = self._closed or LinkClosed("end of output")
            for answer in self._pending.values():
                if not answer.done():
                    answer.set_exception(LinkClosed(f"the server's process has ended ({self._closed})"))
            if self._to_session is not None:
                self._to_session.close()

    def _answer(self, line: bytes) -> Any:
        """Hand a data-plane answer to its waiter right here; anything else is returned for the session
        (parsed JSON, or the error that parsing it raised)."""
        try:
            message: Any = json.loads(line)
        except ValueError as error:
            return error
        if isinstance(message, dict):
            request_id = message.get("id")
            answer = self._pending.get(request_id) if isinstance(request_id, str) else None
            if answer is not None:
                if not answer.done():
                    answer.set_result(message)
                return None
        return message

    async def _notified(self, message: Any) -> bool:
        """Hand a notification to the relay it is for (awaited: the lines after it wait); True if taken."""
        if not isinstance(message, dict) or "id" in message or not isinstance(message.get("params"), dict):
            return False
        params, method = message["params"], message.get("method")
        try:
            if method == "notifications/progress":
                relay = self._progress.get(params.get("progressToken"))
                done, total, said = params.get("progress"), params.get("total"), params.get("message")
                if relay is None or not _number(done) or not (total is None or _number(total)):
                    return False
                await relay(done, total, said if isinstance(said, str) else None)
                return True
            if method == "notifications/message" and self.on_log is not None:
                return await self.on_log(params)
        except Exception:  # a relay's failure loses that one message, never the lines after it
            logger.exception("relaying a server's notification failed")
            return True
        return False

    async def _route(self, message: Any) -> None:
        """Pass a line that answers none of the data plane's requests on to the session, if one is open."""
        parsed: SessionMessage | Exception
        if isinstance(message, ValueError):
            message, parsed = None, message
        if self._to_session is None:
            return  # nobody asked: a stray line before the session opened, or a late answer
        if message is not None:
            try:
                parsed = SessionMessage(
                    mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
                )
            except ValueError as error:
                parsed = error
        try:
            await self._to_session.send(parsed)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._to_session = None

    @asynccontextmanager
    async def session_streams(self) -> AsyncGenerator[tuple[Any, Any], None]:
        """The read and write streams an mcp ``ClientSession`` speaks over, for as long as it is open."""
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](64)
        self._to_session = to_session

        async def pump() -> None:
            async with from_session:
                async for session_message in from_session:
                    dumped = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await self._write(dumped)
                    except LinkClosed:
                        to_session.close()
                        return

        pumping = asyncio.create_task(pump())
        async with to_session, read_stream, write_stream:
            try:
                yield read_stream, write_stream
            finally:
                self._to_session = None
                pumping.cancel()


class LinkTransport(ClientTransport):
    """A fastmcp client transport over a :class:`ChildLink` that is already running."""

    def __init__(self, link: ChildLink) -> None:
        self.link = link

    @asynccontextmanager
    async def connect_session(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Unpack[SessionKwargs]
    ) -> AsyncGenerator[ClientSession, None]:
        """A session on the link's streams (the process outlives it)."""
        options = transport_options or TransportOptions()
        async with (
            self.link.session_streams() as (read, write),
            options.session_class(read, write, **session_kwargs) as session,
        ):
            yield session
