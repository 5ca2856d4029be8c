"""The tool servers an undo talks to: ``check`` while planning, ``compensate`` while executing.

Sessions are opened on first use and kept for the whole undo. Every answer must verify against
the server's pinned key and name the token that was sent; anything else is treated as if the
server could not be reached (the step is unresolved or failed, never counted as reversed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

from fastmcp import FastMCP
from mcp.types import CallToolResult

from hatp_journal.recorder.changes.host_undo import HostReadFailed, host_check, host_compensate
from hatp_journal.recorder.changes.steps import Step
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.gateway.downstream import Downstream
from hatp_journal.recorder.intake.downstream_errors import DownstreamError
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.intake.tokens import TokenStore, recorder_announcement
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.tracing import traced
from hatp_journal.recorder.undo.answer_intake import ANSWER_REFUSED, refused_answer
from hatp_journal.recorder.undo.execute import CompensateUnavailable
from hatp_journal.recorder.undo.planner import CheckUnavailable
from hatp_journal.toolkit.signing import verify_answer
from hatp_journal.toolkit.wire import BINDING_TOOLS, CHECK_TOOL, COMPENSATE_TOOL, META_KEY, CallBinding


class _Unavailable(Exception):
    """A step's server can't answer; ``code`` names why when it is one of ours (``ANSWER_REFUSED``)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class UndoServers:
    """Connections to the configured tool servers, opened lazily inside ``stack``."""

    def __init__(
        self,
        config: RecorderConfig,
        store: RunStore,
        stack: AsyncExitStack,
        embedded: Mapping[str, FastMCP] | None = None,
        connected: Mapping[str, Downstream] | None = None,
    ) -> None:
        """``connected``: sessions already open and keyed (the gateway's own), used instead of new ones."""
        self.embedded = dict(embedded or {})
        self.config = config
        self.pins = PinStore(store.engine)
        self.tokens = TokenStore(store.engine)
        self.announcement = recorder_announcement(store.public_key)
        self.key, self.clock = store.key, store.clock  # the host signs its own undo answers
        self.stack = stack
        self._open: dict[str, Downstream] = dict(connected or {})
        self._launched: dict[str, Downstream] = {}  # started by ``launch``, session not yet opened
        self._unreachable: dict[str, str] = {}  # server → why it could not be reached (not tried again)

    @traced("hatp.check", lambda a: _step_attributes(a["step"]))
    async def check(self, step: Step) -> dict[str, Any]:
        """The server's verified ``check`` answer for ``step`` (changes nothing); the host's own for
        a step the host undoes."""
        try:
            if step.by_host:
                return await host_check(step, await self._host_call(step), self.key, self.clock())
            return await self._ask(step, CHECK_TOOL, {})
        except (_Unavailable, HostReadFailed) as error:
            raise CheckUnavailable(str(error), getattr(error, "code", None)) from None

    @traced("hatp.compensate", lambda a: _step_attributes(a["step"]))
    async def compensate(self, step: Step, request: dict[str, Any]) -> dict[str, Any]:
        """The server's verified ``compensate`` answer for ``request`` (the token is added here); the
        host's own for a step the host undoes."""
        try:
            if step.by_host:
                return await host_compensate(step, request, await self._host_call(step), self.key, self.clock)
            return await self._ask(step, COMPENSATE_TOOL, request)
        except (_Unavailable, HostReadFailed) as error:
            raise CompensateUnavailable(str(error)) from None

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], call: CallBinding | None = None
    ) -> tuple[Downstream, CallToolResult]:
        """Call an ordinary tool (a remedy), as the call ``call``; DownstreamError if the server
        can't be reached."""
        try:
            downstream = await self._connected(server)
        except _Unavailable as error:
            raise DownstreamError(str(error)) from None
        if tool not in downstream.tools or tool in BINDING_TOOLS:
            raise DownstreamError(f"{server} has no tool {tool!r}")
        return downstream, await downstream.call(tool, arguments, call)

    async def _host_call(self, step: Step) -> Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]:
        """Calls of ``step``'s server as the host makes them (its reads and the inverse)."""
        return (await self._connected(step.server)).call

    async def _ask(self, step: Step, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        token = self.tokens.token(step.token_digest)
        if token is None:
            raise _Unavailable(f"the Recorder holds no compensation token for {step.id}")
        arguments = {**arguments, "token": token}
        downstream = await self._connected(step.server)
        try:
            result = await downstream.call(tool, arguments)
        except DownstreamError as error:
            raise _Unavailable(str(error)) from None
        answer = (result.meta or {}).get(META_KEY)
        refused = refused_answer(answer, token, self.config.recorder.max_journal_bytes)
        if refused is not None:  # before anything reads, keeps or shows it
            raise _Unavailable(
                f"{ANSWER_REFUSED}: {step.server}'s answer to {tool} {refused}", ANSWER_REFUSED
            )
        if not isinstance(answer, dict) or "status" not in answer:
            raise _Unavailable(f"{step.server} answered {tool} without an undo answer")
        if not verify_answer(answer, downstream.keys):
            raise _Unavailable(f"{step.server}'s answer to {tool} does not verify with its pinned key")
        if answer.get("tokenDigest") != step.token_digest:
            raise _Unavailable(f"{step.server} answered {tool} for another token")
        return answer

    async def launch(self, names: list[str]) -> None:
        """Start the processes of the stdio servers ``names`` now, so that they boot together; each
        session is still opened when a step first needs it. A server that can't be started is
        left for that moment, which tries again and says why."""
        for name in names:
            server = self.config.servers.get(name)
            if server is None or server.command is None or name in self.embedded:
                continue  # a server reached over HTTP or in memory has no process to start
            if name in self._open or name in self._launched or name in self._unreachable:
                continue
            downstream = Downstream(name, server, self.pins)
            try:
                await downstream.launch(self.stack)
            except DownstreamError:
                continue
            self._launched[name] = downstream

    async def _connected(self, name: str) -> Downstream:
        if name in self._open:
            return self._open[name]
        if name in self._unreachable:
            # Not tried again in this undo: checks run together, and a session must be opened by
            # the task that owns the connections (see ``check_all``).
            raise _Unavailable(self._unreachable[name])
        server = self.config.servers.get(name)
        if server is None:
            raise _Unavailable(f"{name} is not in the Recorder's configuration")
        downstream = self._launched.pop(name, None) or Downstream(
            name, server, self.pins, self.embedded.get(name)
        )
        downstream.request_meta = self.announcement
        try:
            await downstream.connect(self.stack)
        except Exception as error:  # noqa: BLE001 -- a server that won't start or talk: that step's problem only
            self._unreachable[name] = f"{name} could not be reached: {type(error).__name__}: {error}"
            raise _Unavailable(self._unreachable[name]) from None
        self._open[name] = downstream
        return downstream


def _step_attributes(step: Step) -> dict[str, str | int | float | bool]:
    return {"step": step.number, "entry": step.entry.id, "server": step.server}
