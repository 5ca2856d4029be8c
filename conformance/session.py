"""The suite's side of one MCP session with the target: tool calls, binding calls, testing calls.

Everything comes back as received (``_meta["hatp/journal"]`` as a plain dict): checks validate
and verify what the server sent, not what a model would have normalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from fastmcp import Client
from mcp.types import CallToolResult, Tool
from pydantic import ValidationError

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.conformance.checks.outcome import NotTestable
from hatp_journal.toolkit.wire import (
    CHECK_TOOL,
    CLOCK_TOOL,
    COMPENSATE_TOOL,
    KEYS_TOOL,
    META_KEY,
    SAMPLES_TOOL,
    STATE_TOOL,
    TOUCH_TOOL,
    ClockAnswer,
    OperationSamples,
    SamplesAnswer,
    StateAnswer,
)

Answer = TypeVar("Answer", SamplesAnswer, StateAnswer, ClockAnswer)


@dataclass(frozen=True)
class Reply:
    """One tool result: its error flag, its ``_meta["hatp/journal"]`` as received, its content."""

    error: bool
    journal: Any
    content: Any

    @classmethod
    def of(cls, result: CallToolResult) -> Reply:
        """Read a raw MCP result."""
        meta = result.meta if isinstance(result.meta, dict) else {}
        return cls(bool(result.is_error), meta.get(META_KEY), result.structured_content)

    @property
    def code(self) -> str | None:
        """The stable error code the result carries, in an undo answer or an error body."""
        if not isinstance(self.journal, dict):
            return None
        code = self.journal.get("code")
        error = self.journal.get("error")
        if code is None and isinstance(error, dict):
            code = error.get("code")
        return code if isinstance(code, str) else None


class TargetSession:
    """Calls on a connected client; testing-surface failures make the check untestable."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client

    async def tools(self) -> list[Tool]:
        """``tools/list``."""
        return list(await self.client.list_tools())

    async def call(self, tool: str, arguments: dict[str, Any]) -> Reply:
        """Call any tool; never raises on an error result."""
        return Reply.of(await self.client.call_tool_mcp(tool, arguments))

    async def check(self, token: str) -> Reply:
        """``hatp_journal_check``."""
        return await self.call(CHECK_TOOL, {"token": token})

    async def compensate(self, token: str, if_version: str, request_id: str | None = None) -> Reply:
        """``hatp_journal_compensate`` (without override: the suite never overrides a conflict)."""
        arguments: dict[str, Any] = {"token": token, "ifVersion": if_version}
        if request_id is not None:
            arguments["requestId"] = request_id
        return await self.call(COMPENSATE_TOOL, arguments)

    async def keys(self) -> Reply:
        """``hatp_journal_keys``."""
        return await self.call(KEYS_TOOL, {})

    async def samples(self, tool: str) -> OperationSamples:
        """The fresh sample the target offers for ``tool``."""
        answer = await self._testing(SAMPLES_TOOL, {"tool": tool}, SamplesAnswer)
        for offered in answer.operations:
            if offered.tool == tool:
                return offered
        return OperationSamples(tool=tool)

    async def touch(self, tool: str, resource: str) -> StateAnswer:
        """Change ``resource`` outside the run; its state after the change."""
        return await self._testing(TOUCH_TOOL, {"tool": tool, "resource": resource}, StateAnswer)

    async def state(self, tool: str, resource: str) -> StateAnswer:
        """``resource`` as stored now."""
        return await self._testing(STATE_TOOL, {"tool": tool, "resource": resource}, StateAnswer)

    async def clock(self, advance_seconds: int = 0) -> datetime:
        """Move the target's clock forward; the time it shows now."""
        answer = await self._testing(CLOCK_TOOL, {"advanceSeconds": advance_seconds}, ClockAnswer)
        try:
            return parse_wire_time(answer.now)
        except ValueError:
            raise NotTestable(f"{CLOCK_TOOL} answered a time that is not UTC: {answer.now!r}") from None

    async def _testing(self, tool: str, arguments: dict[str, Any], model: type[Answer]) -> Answer:
        reply = await self.call(tool, arguments)
        if reply.error:
            raise NotTestable(f"{tool} refused {arguments}: {reply.code}: {reply.journal}")
        try:
            return model.model_validate(reply.journal)
        except ValidationError as error:
            raise NotTestable(
                f"{tool} answered something else than its schema: {error.errors()[:1]}"
            ) from None
