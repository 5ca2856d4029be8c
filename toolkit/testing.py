"""Test helpers for server authors: a movable clock, a harness that drives a journal without MCP (so
a compensation can be unit-tested in a few lines), the hooks that feed the conformance suite's test-only
surface (:func:`sample_for`, :func:`outside_edit_for`) and :func:`spec_of`, which reads a tool's
declaration back::

    harness = JournalHarness(update_deal, restore_stage, store=tmp_path / "t.db")
    call = harness.call("update_deal", deal_id="D-881", stage="Won")
    assert harness.undo(call).status == "done"
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine

from hatp_journal._shared.clock import wire_time
from hatp_journal._shared.durations import parse_window
from hatp_journal.toolkit._journal import Invocation, Journal
from hatp_journal.toolkit._samples import outside_edit_for, sample_for
from hatp_journal.toolkit._spec import spec_of
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, prove_compensate, verify_answer, verify_call
from hatp_journal.toolkit.wire import CompensateRequest, Override, Sample, UndoAnswer

__all__ = [
    "FakeClock",
    "Invocation",
    "JournalHarness",
    "Sample",
    "outside_edit_for",
    "sample_for",
    "spec_of",
]


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
    """Drive journaled functions, their compensations and receipts without MCP.

    The harness plays the Recorder too: its calls' tokens are bound to ``recorder`` (a fresh
    key unless given) and its undos carry that key's proof, as the Recorder's do; pass
    ``recorder=None`` to call as a client without one (then overrides are refused).
    """

    def __init__(
        self,
        *functions: Callable[..., Any],
        store: str | Path | Engine,
        server: str = "test://server",
        key: SigningKey | None = None,
        clock: FakeClock | None = None,
        recorder: SigningKey | Literal["generate"] | None = "generate",
    ) -> None:
        self.clock = clock or FakeClock()
        self.key = key or SigningKey.generate()
        self.recorder = SigningKey.generate() if recorder == "generate" else recorder
        self.journal = Journal(server, key=self.key, store=store, clock=self.clock)
        self.journal.add(*functions)

    @property
    def keys(self) -> dict[str, VerifyKey]:
        """The journal's published keys by kid."""
        return {self.key.kid: self.key.public}

    def call(self, tool: str, **arguments: Any) -> Invocation:
        """Call a journaled tool with JSON arguments (through the harness's Recorder, if any)."""
        return self.journal.invoke(tool, arguments, recorder=self.recorder.public if self.recorder else None)

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
        if_versions: dict[str, str] | None = None,
    ) -> UndoAnswer:
        """``compensate`` the call, expecting the version it left unless told otherwise (for a call
        that wrote several resources, ``if_versions`` by resource for the others)."""
        effect = call.journal.effect
        expected = if_version or (effect.version if effect else None) or ""
        token = _token(call)
        proof = None
        if self.recorder is not None:
            shown = override.wire() if override is not None else None
            stamp = wire_time(self.clock())
            proof = prove_compensate(
                self.recorder,
                token,
                expected,
                request_id=request_id,
                override=shown,
                if_versions=if_versions,
                issued_at=stamp,
            )
        request = CompensateRequest(
            token=token,
            if_version=expected,
            override=override,
            request_id=request_id,
            proof=proof,
            if_versions=if_versions,
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
