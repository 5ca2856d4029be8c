"""The bodies undo writes, as its readers see them: a plan, a decision, each step's intent and
outcome, the Reversal Record and a halt (part of ``entry_bodies``, which names every kind)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool

from hatp_journal.recorder.record.unreadable import BodyModel
from hatp_journal.toolkit.wire import UndoAnswer


class PlanSections(BodyModel):
    """The parts of a recorded plan that ``show`` counts."""

    request: str = ""
    steps: list[Any] = Field(default_factory=list)
    conflicts: list[Any] = Field(default_factory=list)
    not_reversible: list[Any] = Field(default_factory=list)


class PlanBody(BodyModel):
    plan: PlanSections
    approver: str | None = ""
    plan_digest: str = ""
    checks: dict[str, Any] = Field(default_factory=dict)
    """The signed ``check`` answers the plan was built from, by the step's entry id (kept whole)."""
    decide_by: str = ""


class ApprovalPart(BodyModel):
    decision: str = ""
    by: str = ""
    at: str | None = None


class OverrideChoice(BodyModel):
    step: str


class SignedOverride(BodyModel):
    override: OverrideChoice
    receipt: Any = None


class DecisionBody(BodyModel):
    approval: ApprovalPart
    receipt: Any = None
    """The person's signed receipt of ``approval``, kept whole."""
    counted: StrictBool = False
    why: str = ""
    plan: str | None = None
    ask: str | None = None
    overrides: list[SignedOverride] = Field(default_factory=list)


class OverridesAsSigned(BodyModel):
    """A ``decision``'s signed overrides kept whole: each reaches its server as the person signed it."""

    overrides: list[dict[str, Any]] = Field(default_factory=list)


class IntentRequest(BodyModel):
    if_version: str | None = None


class IntentBody(BodyModel):
    step: str
    plan: str | None = None
    request: IntentRequest = Field(default_factory=IntentRequest)


class OutcomeBody(BodyModel):
    """``undo-outcome``: the server's signed compensate answer, or why none came."""

    step: str
    answer: UndoAnswer | None = None
    failed: str = ""
    plan: str | None = None
    attempt: int | None = None
    """Outcomes written before retries had no number: the first attempt."""


class OutcomeAsSent(BodyModel):
    """``undo-outcome`` as the executor reads it: which step, which attempt, and the answer kept
    whole (the server's signed object goes into the Reversal Record byte for byte, as it came)."""

    step: str
    plan: str | None = None
    attempt: int | None = None
    answer: Any = None
    failed: str | None = None


class IntentAsSent(BodyModel):
    """``undo-intent`` as the executor reads it: the request kept whole, to be sent again as it was."""

    step: str
    plan: str | None = None
    request: dict[str, Any]


class ReversalLine(BodyModel):
    """One line of a Reversal Record; ``receipt`` is the server's signed answer, kept whole."""

    entry: str
    status: str
    retry: bool = False
    step: int | None = None
    summary: str = ""
    undo: str | None = None
    reason: str = ""
    remedy: str | None = None
    receipt: Any = None


class ReversalBody(BodyModel):
    plan: str
    counts: dict[str, int] = Field(default_factory=dict)
    steps: list[ReversalLine] = Field(default_factory=list)


class HaltedBody(BodyModel):
    plan: str
    code: str = ""
    reason: str = ""
    before: str | None = None
