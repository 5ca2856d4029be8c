"""Why a call was allowed or held: stable reason codes, and the verdict of one rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import Field

from hatp_journal.recorder.policy.model import Action
from hatp_journal.toolkit.wire import WireModel

Totals = dict[str, dict[str, str]]
"""Money totals by cap (``perRun``, ``perPeriod``): spent, call, total, cap, currency, … as strings."""


class ReasonCode(StrEnum):
    """Stable reason codes journaled with each decision; tests and UIs match these, not the text."""

    IRREVERSIBLE = "IRREVERSIBLE"
    """The operation is declared ``none`` and the policy asks for those."""
    UNKNOWN_UNDO = "UNKNOWN_UNDO"
    """The operation has no declaration (an unaware server) and the policy asks for those."""
    KIND_ASKS = "KIND_ASKS"
    """The policy asks for this kind (``compensate`` or ``read``), e.g. because it does not mention it."""
    UI_UNDO = "UI_UNDO"
    """The undo would replay through an app's user interface (``via: ui``)."""
    WINDOW_TOO_SHORT = "WINDOW_TOO_SHORT"
    """The undo window is shorter than ``minWindowSeconds`` (or not declared)."""
    MONEY_PER_RUN = "MONEY_PER_RUN"
    """The call would take the run past its money cap."""
    MONEY_PER_PERIOD = "MONEY_PER_PERIOD"
    """The call would take the rolling period past its money cap."""
    NOT_VERIFIED = "NOT_VERIFIED"
    """``requireVerified`` is on and this operation's undo has not passed the conformance suite
    (data ``attestation``: an ``AttestationProblem`` such as ``NOT_ATTESTED``, ``FORGED``, ``STALE``)."""
    VERIFIED = "VERIFIED"
    """A conformance attestation verified the operation (on an allow: which file, its digest)."""
    OVERRIDE = "OVERRIDE"
    """A policy override decided this operation."""
    CLASS_ASKS = "CLASS_ASKS"
    """The policy asks for calls of this reversibility class (data ``class``, ``rule``)."""
    NEVER_AUTONOMOUS = "NEVER_AUTONOMOUS"
    """The class is never autonomous (R4, or the policy says so): a person decides, whatever
    an override says."""
    NOTIFY = "NOTIFY"
    """On an allow: the class is ``allow-notify``; the decision is flagged for the run's reviewers."""
    WITHIN_BUDGET = "WITHIN_BUDGET"
    """On an allow: the class is ``ask-or-budget`` and the call charges within the money caps."""
    UNCLASSIFIED = "UNCLASSIFIED"
    """The call could not be classified (malformed facts, no amount, another currency, no rules)."""
    SNAPSHOT_FAILED = "SNAPSHOT_FAILED"
    """The host's snapshot before the call failed (host-declared compensation): it never runs unprotected."""


class Reason(WireModel):
    """One reason: a stable ``code``, a sentence for the approver, and the values behind it."""

    code: ReasonCode
    detail: str
    data: dict[str, str | int | bool | None] = Field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What one rule says about a call."""

    action: Action
    reasons: tuple[Reason, ...] = ()
    totals: Totals | None = field(default=None)

    @classmethod
    def allow(cls, *reasons: Reason, totals: Totals | None = None) -> Verdict:
        """Forward the call (reasons here are informational, e.g. an override that lifted it)."""
        return cls("allow", reasons, totals)

    @classmethod
    def ask(cls, *reasons: Reason, totals: Totals | None = None) -> Verdict:
        """Hold the call for an approver, saying why."""
        return cls("ask", reasons, totals)


def reason(code: ReasonCode, detail: str, **data: str | int | bool | None) -> Reason:
    """Shorthand for :class:`Reason`."""
    return Reason(code=code, detail=detail, data=data)
