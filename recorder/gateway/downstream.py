"""One downstream tool server, with its session kept open for the Recorder's lifetime."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
from fastmcp import Client, FastMCP
from fastmcp.client.logging import LogMessage, default_log_handler
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, Tool
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.gateway.link import ChildLink, LinkClosed, LinkTransport
from hatp_journal.recorder.gateway.passthrough import LogRelay, agent_log, progress_relay
from hatp_journal.recorder.gateway.relay import Flight, agent_peer, call_journal, callbacks, library_peer
from hatp_journal.recorder.intake.downstream_errors import DownstreamCode as DownstreamCode  # re-exported
from hatp_journal.recorder.intake.downstream_errors import DownstreamError as DownstreamError
from hatp_journal.recorder.intake.journal_objects import bounded
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.tracing import traced
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import (
    BINDING_TOOLS,
    KEYS_TOOL,
    META_KEY,
    RECORDER_META_KEY,
    CallBinding,
    KeysAnswer,
)

# What a dead or broken downstream raises through the client.
_TRANSPORT_ERRORS = (MCPError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError)

# The request `_meta` members of the 2026 protocol era, which the data plane sends itself.
_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def _our_version() -> str:
    try:
        return version("hatp-journal")
    except PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "0"


class Downstream:
    """A connected MCP client to one tool server."""

    def __init__(
        self, name: str, config: ServerConfig, pins: PinStore | None = None, embedded: FastMCP | None = None
    ) -> None:
        self.name = name
        self.config = config
        self.pins = pins
        self.embedded = embedded  # a server running in this process: reached in memory, not by config
        self.tools: dict[str, Tool] = {}
        self.keys: dict[str, VerifyKey] = {}
        self.offered: dict[str, VerifyKey] = {}  # every key it offered at connect (``keys``: those trusted)
        self.request_meta: dict[str, Any] | None = None  # sent with every call (the Recorder's key)
        self._client: Client[Any] | None = None
        self._link: ChildLink | None = None
        self._wire_meta: dict[str, Any] | None = None  # set once the data plane may call directly
        # The agents' calls in flight here: where the server's log messages and requests go.
        self._in_flight: dict[int, Flight] = {}
        self._call_ids = itertools.count()

    async def launch(self, stack: AsyncExitStack, spawned: Any = None) -> None:
        """Start a stdio server's process now, so that several boot at once (``connect`` waits).

        ``spawned``: its process, if ``recorder/cli/boot.py`` started it already (it is taken over).
        """
        if self.embedded is None and self.config.command is not None and self._link is None:
            if spawned is not None:
                self._link = await stack.enter_async_context(ChildLink.adopt(spawned))
                return
            try:
                self._link = await stack.enter_async_context(
                    ChildLink.spawn(
                        self.config.command,
                        self.config.args,
                        env={**os.environ, **self.config.env},
                        cwd=self.config.cwd,
                    )
                )
            except (OSError, ValueError) as error:
                problem = f"{type(error).__name__}: {error}"
                raise DownstreamError(f"{self.name} could not be started: {problem}") from None

    async def connect(self, stack: AsyncExitStack) -> None:
        """Open the session, read ``tools/list`` and pin the receipt keys."""
        await self.launch(stack)
        logs = self._server_logged  # a server's log messages, wherever it runs
        if self.embedded is not None:
            client: Client[Any] = Client(self.embedded, timeout=self.config.timeout_seconds, log_handler=logs)
        elif self._link is not None:
            client = Client(LinkTransport(self._link), timeout=self.config.timeout_seconds, log_handler=logs)
        elif self.config.command is not None:
            transport = StdioTransport(
                self.config.command,
                self.config.args,
                env={**os.environ, **self.config.env},
                cwd=self.config.cwd,
            )
            client = Client(transport, timeout=self.config.timeout_seconds, log_handler=logs)
        else:
            assert self.config.url is not None
            client = Client(self.config.url, timeout=self.config.timeout_seconds, log_handler=logs)
        # The server may ask the agent's client (sampling, elicitation, roots) during a call: relay.py.
        client._session_kwargs.update(callbacks(lambda: list(self._in_flight.values()), self.name))
        try:
            connected = await stack.enter_async_context(client)
            self._client = connected
            self.tools = {tool.name: tool for tool in await connected.list_tools()}
        except _TRANSPORT_ERRORS as error:
            problem = f"{type(error).__name__}: {error}"
            raise DownstreamError(f"{self.name} could not be started: {problem}") from None
        if self._link is not None:
            self._link.on_log = self._link_logged
        if self._link is not None and connected.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Every request of this era carries who is asking; the data plane says it the same way.
            self._wire_meta = {
                _PROTOCOL_VERSION: connected.session.protocol_version,
                _CLIENT_INFO: {"name": "hatp-recorder", "version": _our_version()},
                _CLIENT_CAPABILITIES: {},
            }
        if KEYS_TOOL in self.tools:
            await self._pin_keys()

    @property
    def client(self) -> Client[Any] | None:
        """The open session to the server (for what is not a tool call: resources, prompts)."""
        return self._client

    @property
    def journal_aware(self) -> bool:
        """Whether the server offers the journal binding."""
        return KEYS_TOOL in self.tools

    def agent_tools(self) -> list[Tool]:
        """The tools an agent may see: everything but the binding."""
        return [tool for name, tool in self.tools.items() if name not in BINDING_TOOLS]

    @traced("hatp.downstream", lambda a: {"server": a["self"].name, "tool": a["tool"]})
    async def call(
        self, tool: str, arguments: dict[str, Any], call: CallBinding | None = None
    ) -> CallToolResult:
        """Call a tool; a crash or a hang becomes :class:`DownstreamError`. ``call``: the call this
        is, for the server to echo in the journal object its receipt signs."""
        return await self._call(tool, arguments, call)

    async def _call(
        self, tool: str, arguments: dict[str, Any], call: CallBinding | None = None
    ) -> CallToolResult:
        if self._client is None:
            raise DownstreamError(f"{self.name} is not connected")
        try:
            with anyio.fail_after(self.config.timeout_seconds), self._logs_to(agent_log()):
                return await self._client.call_tool_mcp(
                    tool, arguments, meta=self._meta_for(call), progress_handler=progress_relay.get()
                )
        except TimeoutError:
            raise DownstreamError(
                f"{self.name} did not answer {tool} within {self.config.timeout_seconds:g}s"
            ) from None
        except _TRANSPORT_ERRORS as error:
            raise DownstreamError(f"{self.name} failed on {tool}: {type(error).__name__}: {error}") from None

    def _meta_for(self, call: CallBinding | None) -> dict[str, Any] | None:
        """The request ``_meta`` of one call: the Recorder's announcement, with ``call`` in it."""
        if call is None or self.request_meta is None or RECORDER_META_KEY not in self.request_meta:
            return self.request_meta
        announced = {**self.request_meta[RECORDER_META_KEY], "call": call.wire()}
        return {**self.request_meta, RECORDER_META_KEY: announced}

    @traced("hatp.downstream", lambda a: {"server": a["self"].name, "tool": a["tool"]})
    async def call_wire(
        self, tool: str, arguments: dict[str, Any], call: CallBinding | None = None
    ) -> dict[str, Any]:
        """Call a tool; its result as the server wrote it (plain JSON, the wire's camelCase).

        A stdio server of the 2026 era is called over the data plane, one JSON-RPC message each
        way; any other goes through the client and its result is dumped to the same form.
        """
        if self._link is None or self._wire_meta is None:
            called = await self._call(tool, arguments, call)  # in this span, not a second one
            return called.model_dump(mode="json", by_alias=True, exclude_none=True)
        meta = {**self._wire_meta, **(self._meta_for(call) or {})}
        log = agent_log()
        if log is not None:  # the 2026 era sends log messages only when asked: all, the relay filters
            meta[LOG_LEVEL_META_KEY] = "debug"
        params = {"name": tool, "arguments": arguments, "_meta": meta}
        # The link hands this request's progress, and log messages while it is alone in flight, to the
        # agent's relays in the order of the server's lines: before the answer that follows them.
        try:
            with self._logs_to(log):
                answer = await self._link.request(
                    "tools/call", params, self.config.timeout_seconds, progress_relay.get()
                )
        except TimeoutError:
            raise DownstreamError(
                f"{self.name} did not answer {tool} within {self.config.timeout_seconds:g}s"
            ) from None
        except LinkClosed as error:
            raise DownstreamError(f"{self.name} failed on {tool}: {type(error).__name__}: {error}") from None
        result = answer.get("result")
        if isinstance(result, dict):
            return result
        failed = answer.get("error")
        message = failed.get("message") if isinstance(failed, dict) else None
        if isinstance(message, str):
            raise DownstreamError(f"{self.name} failed on {tool}: MCPError: {message}")
        raise DownstreamError(f"{self.name} failed on {tool}: an answer that is neither result nor error")

    @contextmanager
    def _logs_to(self, relay: LogRelay | None) -> Iterator[None]:
        """While a call is in flight, the server's log messages and requests may go to the agent's
        request (the agent's client and the call's run are taken now, in the call's context)."""
        call = next(self._call_ids)
        self._in_flight[call] = Flight(relay, agent_peer.get() or library_peer(), call_journal.get())
        try:
            yield
        finally:
            del self._in_flight[call]

    async def _link_logged(self, params: dict[str, Any]) -> bool:
        """A log message read off the link: taken here, in line order, unless it is malformed."""
        try:
            message = LogMessage.model_validate(params)
        except ValidationError:
            return False  # the session says what it makes of it
        await self._server_logged(message)
        return True

    async def _server_logged(self, message: LogMessage) -> None:
        """A server's log message: to the one agent request in flight here, else the Recorder's log.

        A log message names no request. With several calls in flight it could be any of theirs, and
        one agent must not read another's: it stays in the Recorder's log.
        """
        flights = list(self._in_flight.values())
        if len(flights) == 1 and flights[0].log is not None:
            await flights[0].log(message)
        else:
            await default_log_handler(message)

    async def _pin_keys(self) -> None:
        result = await self.call(KEYS_TOOL, {})
        self.offered = self._published_keys(result)
        self.trust(self.offered)

    def trust(self, offered: dict[str, VerifyKey]) -> None:
        """Settle which of the ``offered`` keys verify this server's receipts, or refuse it."""
        if self.config.pin:
            # Pinned in the config: only those kids count, whatever else the server offers.
            missing = [kid for kid in self.config.pin if kid not in offered]
            if missing:
                raise DownstreamError(f"{self.name} does not offer the pinned keys {missing}")
            self.keys = {kid: offered[kid] for kid in self.config.pin}
            return
        if self.pins is None:
            self.keys = offered
            return
        pinned = self.pins.pin_first(self.name, offered)
        # Pinned at first contact and then fixed: another key is refused, not trusted.
        if not set(pinned) & set(offered):
            raise DownstreamError(
                f"{self.name} offers keys {_kids(offered)}, none of them pinned ({_kids(pinned)}); "
                "if the server really rotated its key, pin the new kid in the config",
                DownstreamCode.KEY_CHANGED,
            )
        self.keys = pinned

    def _published_keys(self, result: CallToolResult) -> dict[str, VerifyKey]:
        """The keys of a ``hatp_journal_keys`` answer; anything malformed is DOWNSTREAM_FAILED."""
        said = f"{self.name} answered {KEYS_TOOL}"
        if result.is_error:
            text = " ".join(part.text for part in result.content if isinstance(part, TextContent))
            raise DownstreamError(f"{said} with an error: {_short(text)}")
        raw = (result.meta or {}).get(META_KEY)
        if raw is None:
            raise DownstreamError(f"{said} without _meta[{META_KEY!r}]")
        problem = bounded(raw)  # before parsing: a hostile size or depth costs nothing
        if problem is not None:
            raise DownstreamError(f"{said} with {problem}")
        if not isinstance(raw, dict):
            raise DownstreamError(f"{said} with a {type(raw).__name__}, not a JSON object")
        try:
            published = KeysAnswer.model_validate(raw)
        except ValidationError as error:
            fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in error.errors()[:5])
            raise DownstreamError(f"{said} with keys that do not fit the wire format: {fields}") from None
        if not published.keys:
            raise DownstreamError(f"{said} with no keys")
        offered: dict[str, VerifyKey] = {}
        for key in published.keys:
            try:
                offered[key.kid] = VerifyKey.from_wire(key)
            except ValueError as error:  # bad base64, not 32 bytes, or a kid that is not its key's
                raise DownstreamError(
                    f"{said} with an unusable key {_short(key.kid)}: {_short(str(error))}"
                ) from None
        return offered


def _short(text: str, limit: int = 120) -> str:
    """A server's own words, quoted and cut short: they end up on one line of stderr."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _kids(keys: dict[str, VerifyKey], shown: int = 3) -> str:
    """A few key ids, for one line of stderr."""
    kids = sorted(keys)
    more = f" and {len(kids) - shown} more" if len(kids) > shown else ""
    return ", ".join(_short(kid, 40) for kid in kids[:shown]) + more
