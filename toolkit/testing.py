"""Test helpers for server authors: a movable clock and a harness that drives a
journal without MCP, so a compensation can be unit-tested in a few lines::

    harness = JournalHarness(update_deal, restore_stage, store=tmp_path / "t.db")
    call = harness.call("update_deal", deal_id="D-881", stage="Won")
    assert harness.undo(call).status == "done"
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from hatp_journal.toolkit.durations import parse_window
from hatp_journal.toolkit.journal import Invocation, Journal
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, verify_answer, verify_call
from hatp_journal.toolkit.wire import CompensateRequest, Override, UndoAnswer

__all__ = ["FakeClock", "JournalHarness"]


class FakeClock:
    """A clock that moves only when told to. Pass it as ``Journal(clock=...)``."""

    def __init__(self, start: datetime = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime, e.g. datetime(..., tzinfo=UTC)")
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, by: timedelta | str | int) -> None:
        """Move forward by a duration (``timedelta``, ``"P1D"`` or seconds)."""
        self.moment += parse_window(by)

    def set(self, moment: datetime) -> None:
        """Jump to ``moment``."""
        self.moment = moment


class JournalHarness:
    """Drive journaled functions, their compensations and receipts without MCP."""

    def __init__(
        self,
        *functions: Callable[..., Any],
        store: str | Path | Engine,
        server: str = "test://server",
        key: SigningKey | None = None,
        clock: FakeClock | None = None,
    ) -> None:
        self.clock = clock or FakeClock()
        self.key = key or SigningKey.generate()
        self.journal = Journal(server, key=self.key, store=store, clock=self.clock)
        self.journal.add(*functions)

    @property
    def keys(self) -> dict[str, VerifyKey]:
        """The journal's published keys by kid."""
        return {self.key.kid: self.key.public}

    def call(self, tool: str, **arguments: Any) -> Invocation:
        """Call a journaled tool with JSON arguments."""
        return self.journal.invoke(tool, arguments)

    def check(self, call: Invocation) -> UndoAnswer:
        """``check`` the call's token."""
        return self.journal.check(_token(call))

    def undo(
        self,
        call: Invocation,
        *,
        if_version: str | None = None,
        override: Override | None = None,
        request_id: str | None = None,
    ) -> UndoAnswer:
        """``compensate`` the call, expecting the version it left unless told otherwise."""
        effect = call.journal.effect
        expected = if_version or (effect.version if effect else None) or ""
        request = CompensateRequest(
            token=_token(call), if_version=expected, override=override, request_id=request_id
        )
        return self.journal.compensate(request)

    def receipt_verifies(self, call: Invocation, tool: str, **arguments: Any) -> bool:
        """Whether the call's receipt verifies against this call's tool and arguments."""
        return verify_call(call.journal.wire(), tool, arguments, self.keys)

    def answer_verifies(self, answer: UndoAnswer) -> bool:
        """Whether an undo answer's receipt verifies."""
        return verify_answer(answer.wire(), self.keys)


def _token(call: Invocation) -> str:
    token = call.journal.compensation_token
    if token is None:
        raise ValueError(f"this call has no compensation token (undo kind {call.journal.undo})")
    return token
