"""A Reversal Plan as an ask (protocol.md §9 step 4, §11): recorded, then approved or denied, signed.

The approver's authority is checked when they decide, against the directory and the policy's
``undoAuthority`` as they are then. An approval signs the plan's digest; each override of a
conflict is its own signature. A plan that changed since it was shown cannot be approved.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.changes.plan import ReversalPlan
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.directory.not_counted import NotCounted, Refused
from hatp_journal.recorder.record import Entry, Run, RunStore, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.entry_bodies import (
    DecisionBody,
    PlanBody,
    ReadCode,
    Unreadable,
    WireTime,
    read_as,
    read_own,
)
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.recorder.record.written_bodies import (
    OverrideChoice,
    PlanApproval,
    PlanDecisionRecord,
    PlanRecord,
    SignedOverride,
)
from hatp_journal.recorder.runs.asks import DEFAULT_DECIDE_WITHIN, DecisionOutcome, RecordedAsk
from hatp_journal.recorder.runs.walk import each_run
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.planner import PlannedUndo
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)

PlanState = Literal["pending", "approved", "denied", "unreadable"]
"""``unreadable``: the plan entry does not fit its model (an edited or hostile store): it is named
where plans are listed, and never decided or run."""


class RecordedPlan(PlanBody):
    """A ``plan`` entry as the approval reads it: the whole plan by its own model, a wire-time deadline."""

    plan: ReversalPlan  # type: ignore[assignment]  # the whole plan, where PlanBody counts sections
    decide_by: WireTime


@dataclass(frozen=True)
class PlanAsk(RecordedAsk):
    """A recorded plan and where its decision stands; ``unreadable`` says what did not fit."""

    state: PlanState
    unreadable: Unreadable | None = None

    @cached_property
    def body(self) -> RecordedPlan:
        """The plan entry as recorded (its check answers, digest and deadline)."""
        return read_own(RecordedPlan, self.entry)

    @cached_property
    def plan(self) -> ReversalPlan:
        return self.body.plan

    def marker(self) -> Unreadable:
        """What did not fit, for an unreadable plan."""
        return self.unreadable or Unreadable(code=ReadCode.BODY_UNREADABLE, detail="(the plan)")

    @property
    def digest(self) -> str:
        return self.body.plan_digest

    @property
    def decide_by(self) -> str:
        return self.body.decide_by

    @property
    def overrides(self) -> list[str]:
        """The conflicted steps the approver chose, each by its own signature, to overwrite."""
        if self.decision is None:
            return []
        return [o.override.step for o in read_own(DecisionBody, self.decision).overrides]


def record_plan(store: RunStore, planned: PlannedUndo, *, now: datetime, within: timedelta | None) -> PlanAsk:
    """Append the plan as an ask to its ``undoAuthority``, with a deadline and its check answers."""
    plan = planned.plan
    body = PlanRecord.model_construct(
        plan=plan.wire(),
        plan_digest=plan.digest(),
        checks=planned.checks,
        approver=plan.undo_authority,
        decide_by=wire_time(now + (within or DEFAULT_DECIDE_WITHIN)),
    )
    entry = store.append(plan.run, "plan", body.wire())
    return PlanAsk(plan.run, entry, "pending")


def find_plan(store: RunStore, ref: str) -> PlanAsk:
    """The plan named ``RUN/eN``, with its state."""
    run, _, entry_id = ref.rpartition("/")
    try:
        entry = store.entry(run, entry_id)
        entries = store.entries(run)
    except (UnknownRun, UnknownEntry):
        raise UndoError(UndoCode.UNKNOWN_PLAN, f"there is no plan {ref!r}") from None
    if entry.kind != "plan":
        raise UndoError(UndoCode.UNKNOWN_PLAN, f"{ref} is a {entry.kind} entry, not a plan")
    return _state(run, entry, entries)


def pending_plans(store: RunStore) -> list[PlanAsk]:
    """Plans across all runs still waiting for a decision (deadline not passed)."""

    return [ask for ask in listed_plans(store) if ask.state == "pending"]


def listed_plans(store: RunStore) -> list[PlanAsk]:
    """The plans a person is shown across all runs: pending ones, and unreadable ones (named)."""

    def listed_in(run: Run) -> list[PlanAsk]:
        entries = store.entries(run.id)
        asks = [_state(run.id, entry, entries) for entry in entries if entry.kind == "plan"]
        return [ask for ask in asks if ask.state in ("pending", "unreadable")]

    walk = each_run(store, listed_in, logger=_log, doing="listing pending plans")
    return [ask for _, asks in walk for ask in asks]


def is_plan(store: RunStore, ref: str) -> bool:
    """Whether ``RUN/eN`` names a plan (rather than a call's ask)."""
    run, _, entry_id = ref.rpartition("/")
    try:
        return store.entry(run, entry_id).kind == "plan"
    except (UnknownRun, UnknownEntry):
        return False


def decide_plan(
    store: RunStore,
    ref: str,
    decision: Literal["approve", "deny"],
    *,
    person: str,
    key: SigningKey,
    directory: Directory,
    undo_authority: str | None,
    fresh: ReversalPlan | None,
    overrides: Sequence[str] = (),
    now: datetime,
) -> DecisionOutcome:
    """Record ``person``'s decision on a plan; the outcome says whether it counted, and if not, why.

    ``fresh`` is the plan built again just now: an approval counts only if it is identical to the
    plan shown. Refusals are recorded too, as decisions with ``counted: false``.
    """
    ask = find_plan(store, ref)
    plan = ask.plan
    stamp = _not_before_earlier_decisions(store.entries(ask.run), ask.entry.id, wire_time(now))
    approval = PlanApproval(plan=ref, plan_digest=ask.digest, decision=decision, by=person, at=stamp)
    body = PlanDecisionRecord.model_construct(
        plan=ask.entry.id,
        approval=approval,
        receipt=key.sign({"approval": approval.wire()}, stamp).wire(),
        directory=store.keep_directory(directory.snapshot()),
        counted=False,
    )
    check_overrides(plan, decision, overrides)
    conflicts = {c.entry: c for c in plan.conflicts}
    refused = refusal(ask, person, key, directory, undo_authority, now)
    shown = fresh if decision == "approve" else plan
    if refused is None and (shown is None or shown.digest() != ask.digest):
        refused = Refused(
            NotCounted.PLAN_STALE,
            "the plan changed since it was shown (new calls, or a step checks differently now): plan again",
        )
    if refused is not None:
        entry = store.append(ask.run, "decision", body.model_copy(update={"why": refused.why}).wire())
        return DecisionOutcome(False, f"not counted: {refused.why}", entry, refused.code)
    signed = [
        _override(key, ref, ask.digest, conflicts[step].entry, conflicts[step].version_found, person, stamp)
        for step in overrides
    ]
    entry = store.append(
        ask.run, "decision", body.model_copy(update={"counted": True, "overrides": signed}).wire()
    )
    store.checkpoint(ask.run, "approval")
    return DecisionOutcome(True, f"{decision} recorded for {ref}", entry)


def _not_before_earlier_decisions(entries: Sequence[Entry], plan: str, stamp: str) -> str:
    """``stamp``, or the latest time of a decision already recorded on the plan if that is later.

    A decision's time is taken when it is made, but it is recorded after the plan is built again
    (seconds, asking the tool servers): a decision made first in one tab can be recorded after one
    made later in another, and is refused. Its time then must not read earlier than the one that counted.
    """
    times = [str(d.approval.at) for d in _decisions(entries, plan)]
    return max([stamp, *[t for t in times if is_wire_time(t)]])


def _decisions(entries: Sequence[Entry], plan: str) -> list[DecisionBody]:
    """The decisions recorded on the plan in entry ``plan``, in record order (an unreadable one is none)."""
    found = []
    for entry in entries:
        if entry.kind == "decision":
            body = read_as(DecisionBody, entry)
            if isinstance(body, DecisionBody) and body.plan == plan:
                found.append(body)
    return found


def check_overrides(plan: ReversalPlan, decision: str, overrides: Sequence[str]) -> None:
    """BAD_OVERRIDE unless every override names a conflict of ``plan`` and goes with an approval."""
    conflicts = [c.entry for c in plan.conflicts]
    wrong = [o for o in overrides if o not in conflicts]
    if wrong:
        raise UndoError(
            UndoCode.BAD_OVERRIDE,
            f"{wrong[0]} is not a conflict of this plan (conflicts: {', '.join(conflicts) or 'none'})",
        )
    if decision == "deny" and overrides:
        raise UndoError(UndoCode.BAD_OVERRIDE, "overrides go with an approval, not a denial")


def refusal(
    ask: PlanAsk,
    person: str,
    key: SigningKey,
    directory: Directory,
    undo_authority: str | None,
    now: datetime,
) -> Refused | None:
    """Why ``person``'s decision on ``ask`` would not count, whatever the plan built again says; None if
    nothing yet stands in its way. Cheap: it asks no tool server."""
    if undo_authority is None:
        return Refused(
            NotCounted.NO_UNDO_AUTHORITY, "the policy names no undoAuthority: nobody may approve an undo"
        )
    not_theirs = directory.refusal(person, undo_authority, key.public)
    if not_theirs is not None:
        return not_theirs
    if ask.state != "pending":
        return Refused(NotCounted.ALREADY_DECIDED, f"this plan was already {ask.state}")
    if now > parse_wire_time(ask.decide_by):
        return Refused(
            NotCounted.DEADLINE_EXCEEDED, f"this plan closed at {ask.decide_by} because of the deadline"
        )
    return None


def last_refusal(entries: Sequence[Entry], plan: str) -> str | None:
    """Why the latest decision on the plan asked for in entry ``plan`` did not count; None if it
    counted or there is none."""
    decisions = _decisions(entries, plan)
    if not decisions or decisions[-1].counted:
        return None
    return decisions[-1].why or "not counted"


def _override(
    key: SigningKey, ref: str, digest: str, step: str, found: str | None, person: str, stamp: str
) -> dict[str, Any]:
    """One explicit, signed choice to overwrite what changed in ``step``."""
    override = OverrideChoice(
        plan=ref, plan_digest=digest, step=step, version_found=found, by=person, at=stamp
    )
    chosen = override.wire()
    return SignedOverride(override=chosen, receipt=key.sign({"override": chosen}, stamp).wire()).wire()


def _state(run: str, entry: Entry, entries: Sequence[Entry]) -> PlanAsk:
    recorded = read_as(RecordedPlan, entry)
    if isinstance(recorded, Unreadable):
        return PlanAsk(run, entry, "unreadable", unreadable=recorded)
    for later in entries:
        if later.kind != "decision":
            continue
        body = read_as(DecisionBody, later)
        if isinstance(body, DecisionBody) and body.plan == entry.id and body.counted:
            verdict = body.approval.decision
            return PlanAsk(run, entry, "approved" if verdict == "approve" else "denied", later)
    return PlanAsk(run, entry, "pending")
