"""Running an approved Reversal Plan (protocol.md §9 step 5) so that a crash can't compensate twice.

Steps run newest first. Before each compensation a durable ``undo-intent`` entry names the exact
request (``ifVersion``, request id, override, and the Recorder's signature over them and the token's
digest — the token itself stays in the Recorder's token store); after it an ``undo-outcome`` entry
holds the server's signed answer, or ``failed`` when no answer came (the server went away, timed
out, or its answer did not verify). A run resumed after a crash re-sends intents without an
outcome, and a resume retries steps whose latest outcome is ``failed`` (a new ``undo-outcome``
with the next ``attempt``), each with the very same request, which the tool server answers from
its own record: nothing is compensated twice. Only a server's answer is final. When a step stays
(conflict, failure, not reversible, …) nothing it relied on is undone. Each run ends with a
``reversal`` entry (the Reversal Record); one with a step to retry (``retry: true``) is followed,
after a resume, by a later one, and the latest is the record. Before the run (or resume) starts
and before each compensation, the approver's authority is checked again (``authority.py``);
without it the undo halts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.changes.links import dependents, kept_for
from hatp_journal.recorder.changes.plan import ReversalPlan
from hatp_journal.recorder.changes.steps import Chains, Step, steps_of
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import (
    DecisionBody,
    IntentAsSent,
    OutcomeAsSent,
    ReversalBody,
    read_as,
    read_own,
)
from hatp_journal.recorder.record.undo_bodies import OverridesAsSigned
from hatp_journal.recorder.record.written_bodies import (
    IntentRecord,
    OutcomeRecord,
    ReversalLineRecord,
    ReversalRecord,
)
from hatp_journal.recorder.undo.approval import PlanAsk, find_plan
from hatp_journal.recorder.undo.authority import AuthorityNow, halt_of, halt_unless_authorized, halted
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.lease import undo_lease
from hatp_journal.toolkit.signing import compensate_payload

StepStatus = Literal["reversed", "conflicted", "failed", "skipped", "notReversible"]


class CompensateUnavailable(Exception):
    """The step's tool server could not be reached, or its answer did not verify."""


Compensate = Callable[[Step, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Sends ``hatp_journal_compensate`` for a step; returns the verified answer."""
Replan = Callable[[], Awaitable[ReversalPlan]]


@dataclass(frozen=True)
class StepResult:
    """One line of the Reversal Record."""

    step: int
    entry: str
    summary: str
    undo: str
    status: StepStatus
    reason: str = ""
    remedy: str | None = None
    answer: dict[str, Any] | None = None
    retry: bool = False  # no answer came from the server: a resume sends the same request again

    def wire(self) -> dict[str, Any]:
        return ReversalLineRecord.model_construct(
            step=self.step,
            entry=self.entry,
            summary=self.summary,
            status=self.status,
            # what undoing it does, in the words the plan showed
            undo=self.undo if self.status != "notReversible" else None,
            reason=self.reason or None,
            remedy=self.remedy or None,
            receipt=self.answer,  # the server's signed answer, whole, so it verifies on its own
            retry=True if self.retry else None,
        ).wire()


async def execute_plan(
    store: RunStore, ref: str, *, compensate: Compensate, replan: Replan, authority: AuthorityNow
) -> Entry:
    """Run (or resume) the approved plan ``ref``; returns the ``reversal`` entry.

    ``authority`` gives the directory and policy as they are now, to check the approver against.
    A finished undo (its latest Reversal Record has no step to retry) is returned as it is.
    """
    ask = find_plan(store, ref)
    if ask.state == "denied":
        raise UndoError(UndoCode.PLAN_DENIED, f"{ref} was denied; nothing was compensated")
    if ask.state != "approved":
        raise UndoError(UndoCode.PLAN_NOT_APPROVED, f"{ref} has not been approved; nothing was compensated")
    with undo_lease(store.engine, ask.run, ask.entry.id):
        entries = store.entries(ask.run)
        done = reversal_of(entries, ask.entry.id)
        if done is not None and finished(done):
            return done
        halt = halt_of(entries, ask.entry.id)
        if halt is not None:
            raise halted(ask, halt)
        halt_unless_authorized(store, ask, authority)
        intents, outcomes = undo_progress(entries, ask.entry.id)
        if not intents and (await replan()).digest() != ask.digest:
            raise UndoError(
                UndoCode.PLAN_STALE,
                f"{ref} changed since it was approved (new calls, or a step checks differently now); "
                "nothing was compensated: plan again",
            )

        def recheck(step: str) -> None:
            halt_unless_authorized(store, ask, authority, before=step)

        results = await _run(store, ask, entries, intents, outcomes, compensate, recheck)
        body = ReversalRecord.model_construct(
            plan=ask.entry.id,
            steps=[r.wire() for r in results],
            counts={s: sum(r.status == s for r in results) for s in sorted({r.status for r in results})},
        )
        entry = store.append(ask.run, "reversal", body.wire())
        store.checkpoint(ask.run, "reversal")
        return entry


async def _run(
    store: RunStore,
    ask: PlanAsk,
    entries: Sequence[Entry],
    intents: dict[str, Entry],
    outcomes: dict[str, Entry],
    compensate: Compensate,
    recheck: Callable[[str], None],
) -> list[StepResult]:
    plan, overrides = ask.plan, set(ask.overrides)
    steps = {s.id: s for s in steps_of(list(entries))}
    relied_on_by = dependents(entries)
    conflicts = {c.entry: c for c in plan.conflicts}
    undone = {a.entry for a in plan.already_reversed}  # by an earlier undo: what followed them follows on
    staying: set[str] = set()
    left: dict[str, str] = {}  # resource → the version the latest compensation left
    results: list[StepResult] = []
    chains = Chains(steps[entry] for _, entry, _ in _items(plan))
    for item in sorted(_items(plan), key=lambda i: i[0], reverse=True):
        number, entry_id, section = item
        step = steps[entry_id]
        base = (number, entry_id, step.summary, step.undo_text)
        if section == "notReversible":
            remedy = next(n.remedy for n in plan.not_reversible if n.entry == entry_id)
            results.append(StepResult(*base, status="notReversible", reason=step.reason or "", remedy=remedy))
            staying.add(entry_id)
            continue
        if section in ("unresolved", "expired", "alreadyReversed"):
            reason = {
                "unresolved": "unresolved",
                "expired": "the undo window closed",
                "alreadyReversed": "already undone",
            }
            results.append(StepResult(*base, status="skipped", reason=reason[section]))
            if section != "alreadyReversed":
                staying.add(entry_id)
            continue
        if section == "conflict" and entry_id not in overrides:
            check = ask.body.checks.get(entry_id)
            results.append(
                StepResult(*base, status="conflicted", reason=conflicts[entry_id].message, answer=check)
            )
            staying.add(entry_id)
            continue
        keepers = kept_for(entry_id, relied_on_by, staying, undone)
        if keepers:
            results.append(StepResult(*base, status="skipped", reason="relied on by " + ", ".join(keepers)))
            staying.add(entry_id)
            continue
        if unanswered(outcomes.get(entry_id)):
            recheck(entry_id)  # a run can be long: authority is checked before each send, retries too
        result = await _compensate(
            store, ask, step, base, intents, outcomes, left, compensate, overrides, chains
        )
        results.append(result)
        if result.status == "reversed":
            if step.resource and result.answer and result.answer.get("versionLeft"):
                left[step.resource] = str(result.answer["versionLeft"])
            left.update(_left_on_each(result.answer))
        else:
            staying.add(entry_id)
    return results


async def _compensate(
    store: RunStore,
    ask: PlanAsk,
    step: Step,
    base: tuple[int, str, str, str],
    intents: dict[str, Entry],
    outcomes: dict[str, Entry],
    left: dict[str, str],
    compensate: Compensate,
    overrides: set[str],
    chains: Chains,
) -> StepResult:
    """Compensate one step: intent, request, outcome — or pick up where a crash or a lost server left it."""
    outcome = outcomes.get(step.id)
    if unanswered(outcome):
        attempt = 1 if outcome is None else _attempt(outcome) + 1
        intent = intents.get(step.id)
        if intent is None:
            request = _request(store, ask, step, left, overrides, chains)
            intent = store.append(
                ask.run, "undo-intent", IntentRecord(plan=ask.entry.id, step=step.id, request=request).wire()
            )
        else:
            # The very same request, proof included: as recorded, not rebuilt from a model.
            request = dict(read_own(IntentAsSent, intent).request)
        answer: dict[str, Any] | None = None
        failed = None
        try:
            answer = await compensate(step, request)
        except CompensateUnavailable as error:
            failed = str(error)
        written = OutcomeRecord.model_construct(
            plan=ask.entry.id,
            step=step.id,
            intent=intent.id,
            server=step.server,
            attempt=attempt,
            answer=answer,
            failed=failed,
        )
        outcome = store.append(ask.run, "undo-outcome", written.wire())
    assert outcome is not None
    sent = read_own(OutcomeAsSent, outcome)
    answer = sent.answer if isinstance(sent.answer, dict) else None
    if answer is None:
        reason = sent.failed if sent.failed is not None else "no answer"
        return StepResult(*base, status="failed", reason=reason, retry=True)
    status = answer.get("status")
    if status == "done":
        return StepResult(*base, status="reversed", answer=answer)
    if status == "conflict":
        return StepResult(*base, status="conflicted", reason=str(answer.get("message", "")), answer=answer)
    reason = f"{answer.get('code') or status}: {answer.get('message', '')}"
    return StepResult(*base, status="failed", reason=reason, answer=answer)


def _request(
    store: RunStore,
    ask: PlanAsk,
    step: Step,
    left: dict[str, str],
    overrides: set[str],
    chains: Chains,
) -> dict[str, Any]:
    """The compensate request, signed by the Recorder (the token is added when it is sent).

    ``ifVersion`` is what a later compensation of the same resource left.
    """
    # After a later step's undo, this step's resource is at the version that undo left — only
    # if the later call started from this step's version; otherwise someone wrote in between
    # and the server must see the step's own version (and answer a conflict).
    after = chains.next(step)
    chained = after is not None and after.before == step.version
    if_version = left.get(step.resource or "", step.version) if chained else step.version
    request: dict[str, Any] = {"ifVersion": if_version, "requestId": f"{ask.ref}#{step.id}"}
    override = None
    if step.id in overrides:
        conflict = next(c for c in ask.plan.conflicts if c.entry == step.id)
        request["ifVersion"] = conflict.version_found or if_version
        assert ask.decision is not None
        decided = read_own(DecisionBody, ask.decision)
        index = next(i for i, o in enumerate(decided.overrides) if o.override.step == step.id)
        signed = read_own(OverridesAsSigned, ask.decision).overrides[index]  # as the person signed it
        override = {
            "approval": f"{ask.run}/{ask.decision.id}#{step.id}",
            "by": decided.approval.by,
            "versionFound": conflict.version_found,
            "decision": signed,  # the person's own signature, for the server's record
        }
        override = {k: v for k, v in override.items() if v is not None}
        request["override"] = override
    if_versions = _if_versions(step, left, chains, ask, overrides)
    if if_versions is not None:
        request["ifVersions"] = if_versions
    payload = compensate_payload(
        step.token_digest or "", request["ifVersion"], request["requestId"], override, if_versions
    )
    request["proof"] = store.key.sign(payload, wire_time(store.clock())).wire()
    return request


def _if_versions(
    step: Step, left: dict[str, str], chains: Chains, ask: PlanAsk, overrides: set[str]
) -> dict[str, str] | None:
    """For a call that wrote several resources: the version each other resource is expected at,
    chained as ``ifVersion`` is (what a later step's undo left it at), or the version an approver
    chose to overwrite."""
    others = [write for write in step.writes[1:] if write.version is not None]
    if not others:
        return None
    expected: dict[str, str] = {}
    for write in others:
        after = chains.next(step, write.resource)
        followed = after.written(write.resource) if after is not None else None
        chained = followed is not None and followed.before == write.version
        own = str(write.version)
        expected[write.resource] = left.get(write.resource, own) if chained else own
    if step.id in overrides:
        conflict = next(c for c in ask.plan.conflicts if c.entry == step.id)
        for found in conflict.resources or ():
            seen = found.version_found
            if found.status == "conflict" and found.resource in expected and seen is not None:
                expected[found.resource] = seen
    return expected


def _left_on_each(answer: dict[str, Any] | None) -> dict[str, str]:
    """The version a compensate left on each resource of a call that wrote several."""
    found = (answer or {}).get("resources")
    each = found if isinstance(found, list) else []
    return {
        str(one["resource"]): str(one["versionLeft"])
        for one in each
        if isinstance(one, dict) and isinstance(one.get("resource"), str) and one.get("versionLeft")
    }


def _items(plan: ReversalPlan) -> list[tuple[int, str, str]]:
    return [
        *((s.step, s.entry, "step") for s in plan.steps),
        *((b.step, b.entry, "step") for b in plan.blocked),
        *((c.step, c.entry, "conflict") for c in plan.conflicts),
        *((n.step, n.entry, "notReversible") for n in plan.not_reversible),
        *((u.step, u.entry, "unresolved") for u in plan.unresolved),
        *((e.step, e.entry, "expired") for e in plan.expired),
        *((a.step, a.entry, "alreadyReversed") for a in plan.already_reversed),
    ]


def undo_progress(entries: Sequence[Entry], plan: str) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """The ``undo-intent`` and latest ``undo-outcome`` entries of ``plan`` so far, by the step's entry id.

    A step has one intent; a retried step has one outcome per attempt, and the latest one counts
    (entries come in record order, so a later outcome replaces an earlier one here).
    """
    intents: dict[str, Entry] = {}
    outcomes: dict[str, Entry] = {}
    for entry in entries:
        if entry.kind == "undo-intent":
            intent = read_own(IntentAsSent, entry)
            if intent.plan == plan:
                intents[intent.step] = entry
        elif entry.kind == "undo-outcome":
            outcome = read_own(OutcomeAsSent, entry)
            if outcome.plan == plan:
                outcomes[outcome.step] = entry
    return intents, outcomes


def reversal_of(entries: Sequence[Entry], plan: str) -> Entry | None:
    """The latest Reversal Record of ``plan`` (its id in the run), once the undo has run."""
    return next((e for e in reversed(entries) if e.kind == "reversal" and _plan_of(e) == plan), None)


def _plan_of(entry: Entry) -> str | None:
    body = read_as(ReversalBody, entry)
    return body.plan if isinstance(body, ReversalBody) else None


def finished(reversal: Entry) -> bool:
    """Whether the undo a Reversal Record ends is over: no step of it waits for a retry."""
    return not any(line.retry for line in read_own(ReversalBody, reversal).steps)


def unanswered(outcome: Entry | None) -> bool:
    """Whether a step still needs its request sent: never sent, or no answer came from its server."""
    return outcome is None or not isinstance(read_own(OutcomeAsSent, outcome).answer, dict)


def _attempt(outcome: Entry) -> int:
    return read_own(OutcomeAsSent, outcome).attempt or 1  # outcomes written before retries had no number
