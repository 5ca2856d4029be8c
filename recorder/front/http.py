"""The Recorder's HTTP front: tool calls on the data plane, everything else through the mcp library.

An ASGI layer inside FastMCP's streamable-HTTP app (after its Host/Origin guard, before the mcp
library's session manager). A POST on the MCP path whose body is one ``tools/call`` of a published
tool in the 2026 protocol era goes straight to :meth:`Recorder.answer` (see
:mod:`hatp_journal.recorder.front.fast_calls`) and is answered with ``application/json``, as the library
answers a call that sends nothing before its result. Every other request is replayed, untouched,
into the library's app: discovery, the legacy era and its sessions, ``tools/list``, the binding
tools, a call that asks for progress (a ``progressToken``) or log messages (a log level): they go
on an event stream with the library's relays; a batch, anything the library would refuse (Accept,
routing headers, ``Mcp-Param-*`` headers, a body over its limit), and every request of an app with
authentication. (FastMCP's own client asks for both on every call: its calls take the library's way.)

A call still unanswered after :data:`PING_SECONDS` (one waiting for a person's decision) commits
``text/event-stream`` and sends keep-alive comments until its result, as the library does, so a
proxy's idle timeout does not cut it.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast, get_args

import anyio
from fastmcp import FastMCP
from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import INTERNAL_ERROR, LOG_LEVEL_META_KEY, LoggingLevel, LoggingMessageNotificationParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hatp_journal.recorder.front.fast_calls import (
    FastCall,
    as_sent,
    as_sent_in_handshake_era,
    fast_call,
    modern,
)
from hatp_journal.recorder.gateway import passthrough
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.relay_rounds import declared_capabilities, request_rounds
from hatp_journal.recorder.runs.waiting import Progress

_Call = tuple[Any, FastCall, Any]
"""(request id, call, the request's params: None in a handshake-era session) the data plane answers."""

PING_SECONDS = 15.0
"""How long a call may run before its answer becomes an event stream with keep-alives (the library's)."""

_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower().encode()
_MODERN = frozenset(version.encode() for version in MODERN_PROTOCOL_VERSIONS)
_HANDSHAKE = frozenset(version.encode() for version in HANDSHAKE_PROTOCOL_VERSIONS)
_LEVELS = frozenset(get_args(LoggingLevel))
_JSON_HEADERS = [(b"content-type", b"application/json")]
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]

logger = logging.getLogger(__name__)

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


ORIGIN_SETTING = "FASTMCP_HTTP_HOST_ORIGIN_PROTECTION"
"""FastMCP's setting for its Host/Origin guard; left unset, the Recorder uses ``auto``."""


async def serve_http(recorder: Recorder, mcp: FastMCP, host: str, port: int) -> None:
    """Serve the agent over streamable HTTP on ``host``:``port`` until cancelled.

    A Recorder on a loopback address refuses requests whose Host or Origin is not loopback too
    (FastMCP's guard in ``auto`` mode; its own default is off): a web page the approver's browser
    opens must not reach the agent's tools by DNS rebinding. The setting still overrides it.
    """
    guard: dict[str, Any] = {} if ORIGIN_SETTING in os.environ else {"host_origin_protection": "auto"}
    await mcp.run_async(
        transport="http",
        host=host,
        port=port,
        show_banner=False,
        middleware=[data_plane(recorder, mcp)],
        **guard,
    )


def data_plane(recorder: Recorder, mcp: FastMCP) -> Middleware:
    """The data plane, as a middleware of ``mcp.http_app()``: inside its Host/Origin guard."""
    return Middleware(FastCalls, recorder=recorder, mcp=mcp)


class FastCalls:
    """Answers the data plane's calls; hands every other request to ``app``, the library's."""

    def __init__(self, app: ASGIApp, recorder: Recorder, mcp: FastMCP) -> None:
        self.app = app
        self.recorder = recorder
        self.stamp = mcp._mcp_server.server_info_stamp
        self.enabled = mcp.auth is None  # the library checks a bearer token per request: none to skip
        self.mcp = mcp
        self._param_headed: dict[str, bool] = {}  # tool name -> its schema declares Mcp-Param headers
        self._levels: dict[str, LoggingLevel] = {}  # handshake session id -> its logging/setLevel
        self._asked: set[str] = set()  # handshake sessions whose clients a server may ask (relay.py)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _could_be_fast(scope) if self.enabled else None
        if session is None:
            if self.enabled and _opens_a_session(scope):
                await self._initialize(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        messages, complete = await _body(receive)
        body = b"".join(m.get("body", b"") for m in messages)
        call = self._call_in(body, scope, session) if complete else None
        if call is None:
            await self.app(scope, _replaying(messages, receive), send)
            return
        if session:
            transport = _session_transport(scope, session)
            if transport is None:  # unknown, ended or expired: the library says so
                await self.app(scope, _replaying(messages, receive), send)
                return
            with _in_flight(transport):  # the session is in use: it does not idle out meanwhile
                await self._answer(call, scope, receive, send, session)
            return
        await self._answer(call, scope, receive, send, session)

    async def _initialize(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request that may open a handshake-era session to the library, noting the session
        if its client declared sampling, elicitation or roots: a tool server may ask it things during a
        call, which the library relays on the call's event stream, so its calls take the library's way."""
        messages, complete = await _body(receive)
        body = b"".join(m.get("body", b"") for m in messages)
        if not complete or not _declares_asking(body):
            await self.app(scope, _replaying(messages, receive), send)
            return

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_HEADER:
                        self._asked.add(value.decode("latin-1"))
            await send(message)

        await self.app(scope, _replaying(messages, receive), noting)

    def _call_in(self, body: bytes, scope: Scope, session: str) -> _Call | None:
        """(request id, call) of a body the data plane answers, else None."""
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if session:
            return self._handshake_call_in(message, session)
        call = fast_call(self.recorder.forwards, message)
        if call is None:
            return None
        request_id = message["id"]
        meta = call[3]
        if (
            message.get("jsonrpc") != "2.0"
            or isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
            or "progressToken" in meta  # progress is sent on an event stream: the library's
            or LOG_LEVEL_META_KEY in meta  # so are the server's log messages the agent asked for
            or self._declares_param_headers(message["params"]["name"])
        ):
            return None
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        if not isinstance(classify_inbound_request(message, headers=headers), InboundModernRoute):
            return None  # the library says what does not match
        return request_id, call, message["params"]

    def _handshake_call_in(self, message: Any, session: str) -> _Call | None:
        """(request id, call) of a handshake-era session's message the data plane answers, else None.

        The session's ``logging/setLevel`` is noted on its way to the library (which answers it):
        the data plane relays the server's log messages at that level.
        """
        if isinstance(message, dict) and message.get("method") == "logging/setLevel":
            level = (
                (message.get("params") or {}).get("level")
                if isinstance(message.get("params"), dict)
                else None
            )
            if level in _LEVELS:
                self._levels[session] = cast(LoggingLevel, level)
            return None
        if session in self._asked:  # its server may ask its client things: the library relays them
            return None
        call = fast_call(self.recorder.forwards, message, handshake=True)
        if call is None or modern(call[3]):  # the 2026 envelope in a handshake session: the library's call
            return None
        request_id = message["id"]
        if (
            message.get("jsonrpc") != "2.0"
            or isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
        ):
            return None
        if call[3] is not None and self._declares_param_headers(message["params"]["name"]):
            return None
        return request_id, call, None

    def _declares_param_headers(self, name: str) -> bool:
        """Whether the tool's schema asks for ``Mcp-Param-*`` headers, which the library checks."""
        known = self._param_headed.get(name)
        if known is None:
            server, tool = self.recorder.forwards[name]
            schema = self.recorder.downstreams[server].tools[tool].input_schema
            known = self._param_headed[name] = "x-mcp-header" in json.dumps(schema)
        return known

    async def _answer(
        self, call: _Call, scope: Scope, receive: Receive, send: Send, session: str = ""
    ) -> None:
        """Answer as JSON; or, once the call sends a notification (a handshake-era call's progress or
        log messages) or runs past :data:`PING_SECONDS`, as an event stream ending with the result."""
        request_id, (server, tool, arguments, meta), params = call
        answered = anyio.Event()
        noted = anyio.Event()
        notes: list[dict[str, Any]] = []
        reply: list[tuple[int, dict[str, Any]]] = []

        def note(message: dict[str, Any]) -> None:
            notes.append(message)
            noted.set()

        async def answer() -> None:
            progress = None
            if session:  # the handshake era: the server's progress and log messages go on the stream
                progress = _progress_to(meta, note)
                passthrough.progress_relay.set(cast(passthrough.ProgressRelay | None, progress))
                level = self._levels.get(session) or self.mcp.client_log_level
                passthrough.log_relay.set(_logs_to(level, note))
            try:
                if session:
                    result = await self.recorder.answer(server, tool, arguments, meta, progress)
                else:  # the 2026 era: what its server asks the agent comes back in rounds
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
            except Exception:
                logger.exception("the Recorder failed on %s_%s", server, tool)
                error = {"code": INTERNAL_ERROR, "message": "Internal error"}
                status = ERROR_CODE_HTTP_STATUS.get(INTERNAL_ERROR, 200)
                reply.append((status, {"jsonrpc": "2.0", "id": request_id, "error": error}))
            else:
                sent = as_sent_in_handshake_era(result) if session else as_sent(result, self.stamp)
                reply.append((200, {"jsonrpc": "2.0", "id": request_id, "result": sent}))
            answered.set()
            noted.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer)
            with anyio.move_on_after(PING_SECONDS):
                await noted.wait()
            if answered.is_set() and not notes:
                status, message = reply[0]
                await _send_json(send, status, _encode(message).encode())
                return
            await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            if not notes and not answered.is_set():  # past the interval: a keep-alive first
                await send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
            while True:
                while notes:
                    event = f"event: message\r\ndata: {_encode(notes.pop(0))}\r\n\r\n".encode()
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                if answered.is_set():
                    break
                noted = anyio.Event()
                with anyio.move_on_after(PING_SECONDS) as waited:
                    await noted.wait()
                if waited.cancelled_caught:
                    await send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
            event = f"event: message\r\ndata: {_encode(reply[0][1])}\r\n\r\n".encode()
            await send({"type": "http.response.body", "body": event, "more_body": False})


def _could_be_fast(scope: Scope) -> str | None:
    """What the headers say: a POST on the MCP path that takes JSON, of the 2026 era without a
    session ("" returned) or of the handshake era in one (its id returned); else None."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    app = scope.get("app")
    if app is None or scope["path"] != getattr(app.state, "path", None):
        return None
    headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
    version = accept = session = None
    length = 0
    for name, value in headers:
        if name == _VERSION_HEADER:
            version = value
        elif name == b"accept":
            accept = value
        elif name == b"content-length":
            length = int(value) if value.isdigit() else DEFAULT_MAX_REQUEST_BODY_SIZE + 1
        elif name == _SESSION_HEADER:
            session = value
        elif name.startswith(_PARAM_PREFIX):
            return None
    if length > DEFAULT_MAX_REQUEST_BODY_SIZE or not _takes_json(accept):
        return None
    if session is not None:
        return session.decode("latin-1") if version in _HANDSHAKE and session else None
    if version not in _MODERN:
        return None
    text = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers]
    return "" if find_duplicated_routing_header(text) is None else None


def _session_transport(scope: Scope, session: str) -> Any:
    """The library's transport of a handshake-era session still open, else None."""
    manager = None
    app = scope.get("app")
    if app is None:
        return None
    for route in getattr(app, "routes", ()):
        if getattr(route, "path", None) == app.state.path:
            manager = getattr(route.app, "session_manager", None)
    instances = getattr(manager, "_server_instances", {})
    transport = instances.get(session)
    if transport is None or transport.is_terminated:
        return None
    idle = getattr(transport, "idle_scope", None)
    if idle is not None and idle.cancel_called:
        return None
    return transport


@contextmanager
def _in_flight(transport: Any) -> Iterator[None]:
    """Hold the session's idle countdown while the data plane answers one of its requests, as the
    library does for its own (a session with only data-plane calls would otherwise expire)."""
    idle, timeout = getattr(transport, "idle_scope", None), getattr(transport, "_idle_timeout", None)
    if idle is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout


def _progress_to(meta: Any, note: Callable[[dict[str, Any]], None]) -> Progress | None:
    """A relay of progress to the agent's request, if it sent a ``progressToken``."""
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is None:
        return None

    async def send(progress: float, total: float | None, message: str | None) -> None:
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        note({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    return send


def _logs_to(lowest: LoggingLevel | None, note: Callable[[dict[str, Any]], None]) -> passthrough.LogRelay:
    """A relay of a server's log messages at ``lowest`` and above to the agent's request."""

    async def relay(message: LoggingMessageNotificationParams) -> None:
        if lowest is not None and passthrough.severity(message.level) < passthrough.severity(lowest):
            return
        params = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        note({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    return relay


def _opens_a_session(scope: Scope) -> bool:
    """A POST on the MCP path without a session: perhaps a handshake-era ``initialize``."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return False
    app = scope.get("app")
    if app is None or scope["path"] != getattr(app.state, "path", None):
        return False
    return all(name != _SESSION_HEADER for name, _ in scope["headers"])


def _declares_asking(body: bytes) -> bool:
    """Whether ``body`` is an ``initialize`` whose client declares sampling, elicitation or roots."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return False
    params = message.get("params")
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    return isinstance(capabilities, dict) and any(
        isinstance(capabilities.get(name), dict) for name in ("sampling", "elicitation", "roots")
    )


def _takes_json(accept: bytes | None) -> bool:
    """Whether Accept allows both answers the library may give: JSON, and an event stream."""
    if accept is None:
        return False
    types = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    wildcard = b"*/*" in types
    json_too = wildcard or bool(types & {b"application/json", b"application/*"})
    return json_too and (wildcard or bool(types & {b"text/event-stream", b"text/*"}))


async def _body(receive: Receive) -> tuple[list[Message], bool]:
    """The messages that bring the request's body, and whether they bring all of it.

    Reading stops past the library's limit, or when the client goes away.
    """
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, True
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return messages, False


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` as if nothing had been read from it yet."""
    pending = messages[::-1]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
