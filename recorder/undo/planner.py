"""Planning an undo (SPEC §9 steps 1-3): dependency closure, a ``check`` of each step, the plan.

Nothing here changes a tool server: ``check`` is a dry run. The same request planned twice
against an unchanged world gives the same plan, byte for byte, which is how a stale approval
is caught (:func:`build_plan` is run again before approval and before execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hatp_journal.recorder.record import Entry, RunStore, UnknownRun
from hatp_journal.recorder.record.entry_bodies import Unreadable, read_check_answer
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.links import dependents
from hatp_journal.recorder.undo.plan import (
    AlreadyReversed,
    Blocked,
    Conflict,
    Expired,
    NotReversible,
    ReadSince,
    ReversalPlan,
    UndoStep,
    Unresolved,
)
from hatp_journal.recorder.undo.steps import Step, later_writers, steps_of
from hatp_journal.toolkit.clock import parse_wire_time
from hatp_journal.toolkit.wire import Money


class CheckUnavailable(Exception):
    """The step's tool server could not answer ``check`` (unreachable, unverifiable answer)."""


Check = Callable[[Step], Awaitable[dict[str, Any]]]
"""Asks a step's tool server for ``check``; returns its verified answer or raises CheckUnavailable."""


@dataclass(frozen=True)
class UndoRequest:
    """What a person asked to undo: everything from step N on, or chosen steps."""

    from_step: int | None = None
    steps: tuple[int, ...] = ()

    def describe(self) -> str:
        """``from 1`` or ``steps 2, 5``: how the plan names the request."""
        if self.from_step is not None:
            return f"from {self.from_step}"
        return "steps " + ", ".join(str(n) for n in sorted(set(self.steps)))

    def chosen(self, count: int) -> set[int]:
        """The step numbers asked for; out of range is an error naming the range."""
        numbers = set(range(self.from_step, count + 1)) if self.from_step is not None else set(self.steps)
        asked = [self.from_step] if self.from_step is not None else list(self.steps)
        if not asked:
            raise UndoError(UndoCode.STEP_OUT_OF_RANGE, "name a step: --from N or --step N")
        wrong = [n for n in asked if not 1 <= n <= count]
        if wrong:
            raise UndoError(
                UndoCode.STEP_OUT_OF_RANGE,
                f"step {wrong[0]} is out of range: the run has {count} step{'s' * (count != 1)}",
            )
        return numbers


@dataclass(frozen=True)
class PlannedUndo:
    """A plan and the signed ``check`` answers it was built from (kept as evidence)."""

    plan: ReversalPlan
    checks: dict[str, dict[str, Any]]


async def build_plan(
    store: RunStore,
    run_id: str,
    request: UndoRequest,
    *,
    requested_by: str,
    undo_authority: str,
    check: Check,
    now: datetime,
) -> PlannedUndo:
    """Plan undoing ``request`` in ``run_id``; every compensable step is checked with its server."""
    try:
        run = store.run(run_id)
        entries = store.entries(run_id)
    except UnknownRun:
        raise UndoError(UndoCode.UNKNOWN_RUN, f"there is no run {run_id!r}") from None
    steps = steps_of(entries)
    by_id = {step.id: step for step in steps}
    relied_on_by = dependents(entries)
    chosen = {steps[n - 1].id for n in request.chosen(len(steps))}
    closure = _closure(chosen, relied_on_by)
    planned = sorted(
        (by_id[e] for e in closure if by_id[e].kind not in ("read", "no-effect")),
        key=lambda s: s.number,
        reverse=True,
    )
    found = Sections()
    checks: dict[str, dict[str, Any]] = {}
    for step in planned:
        await _place(found, step, planned, check, checks, now)
    _block(found, relied_on_by)
    reads = _read_since(store, run_id, planned)
    agents = ", ".join(sorted({run.agent, *(r.agent for r in reads)}))
    memory = f"{agents}: what an agent read stays in its own memory, which does not pass through "
    memory += "the Recorder, so this list may be incomplete"
    plan = ReversalPlan(
        run=run.id,
        agent=run.agent,
        principal=run.principal,
        requested_by=requested_by,
        request=request.describe(),
        through=steps[-1].id if steps else None,
        undo_authority=undo_authority,
        **vars(found),
        read_since=reads,
        unrecorded_memory=memory,
    )
    return PlannedUndo(plan, checks)


@dataclass
class Sections:
    """The plan's sections while they are being filled, newest step first."""

    steps: list[UndoStep] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    not_reversible: list[NotReversible] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    expired: list[Expired] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    already_reversed: list[AlreadyReversed] = field(default_factory=list)


async def _place(
    plan: Sections,
    step: Step,
    planned: Sequence[Step],
    check: Check,
    checks: dict[str, dict[str, Any]],
    now: datetime,
) -> None:
    """Put one step in the section it belongs to, checking it with its server if compensable."""
    item = {
        "step": step.number,
        "entry": step.id,
        "server": step.server,
        "tool": step.tool,
        "summary": step.summary,
    }
    if step.kind == "unresolved":
        plan.unresolved.append(Unresolved(**item, reason=step.reason or "unresolved", code=step.code))
        return
    if step.kind in ("none", "unknown"):
        remedy = step.journal.get("remedy")
        kind = "none" if step.kind == "none" else "unknown"
        plan.not_reversible.append(
            NotReversible(
                **item, kind=kind, reason=step.reason or kind, remedy=str(remedy) if remedy else None
            )
        )
        return
    if step.undo_by is not None and now > parse_wire_time(step.undo_by):
        plan.expired.append(Expired(**item, undo_by=step.undo_by))
        return
    try:
        answer = await check(step)
    except CheckUnavailable as error:
        plan.unresolved.append(Unresolved(**item, reason=f"check could not run: {error}"))
        return
    checks[step.id] = answer
    read = read_check_answer(answer)
    if isinstance(read, Unreadable):
        # Signed by its server, yet not of the wire's shape: kept in the plan entry, step unresolved.
        plan.unresolved.append(Unresolved(**item, reason=read.text(), code=read.code))
        return
    status = read.status
    undo = step.undo_text
    later = later_writers(step, planned)
    # Later steps of this plan changed the same resource: their undo comes first and leaves the
    # version this one expects, so a "conflict" with the latest of them is our own doing — but
    # only if nobody else wrote in between (each later call started from the previous version).
    ours = (
        status == "conflict"
        and bool(later)
        and read.version_found == later[-1].version
        and unbroken(step, later)
    )
    message = read.message
    if status == "conflict" and later and not unbroken(step, later):
        gap = next(s for s, prev in zip(later, [step, *later], strict=False) if s.before != prev.version)
        message = f"changed outside the run before {gap.id} (expected {gap.before})"
    if status == "ok" or ours:
        cost = step.undo.get("cost")
        plan.steps.append(
            UndoStep(
                **item,
                undo=undo,
                side_effects=step.side_effects,
                cost=Money.model_validate(cost) if isinstance(cost, dict) else None,
                resource=step.resource,
                undo_by=step.undo_by,
                after=later[0].id if ours else None,
            )
        )
    elif status == "conflict":
        plan.conflicts.append(
            Conflict(
                **item,
                undo=undo,
                resource=step.resource,
                version_expected=read.version_expected,
                version_found=read.version_found,
                changed_by=read.changed_by,
                changes=list(read.changes),
                message=message,
            )
        )
    elif status == "expired":
        plan.expired.append(Expired(**item, undo_by=read.undo_by or step.undo_by))
    elif status == "done":
        plan.already_reversed.append(AlreadyReversed(**item))
    else:
        why = f"check answered {read.code or status}: {read.message}".rstrip(": ")
        plan.unresolved.append(Unresolved(**item, reason=why))


def unbroken(step: Step, later: Sequence[Step]) -> bool:
    """Whether each later write of the resource started from the version the previous one left."""
    return all(s.before == prev.version for s, prev in zip(later, [step, *later], strict=False))


def _block(plan: Sections, relied_on_by: dict[str, set[str]]) -> None:
    """Keep every step that a staying step relied on (newest first, so it carries backwards)."""
    staying = {i.entry for i in [*plan.conflicts, *plan.not_reversible, *plan.unresolved, *plan.expired]}
    kept: list[UndoStep] = []
    for step in plan.steps:  # newest first
        keepers = sorted(relied_on_by.get(step.entry, set()) & staying, key=lambda e: int(e[1:]))
        if keepers:
            staying.add(step.entry)
            kept.append(step)
            plan.blocked.append(Blocked(**_item(step), undo=step.undo, kept_for=keepers))
    plan.steps[:] = [s for s in plan.steps if s not in kept]


def _item(step: UndoStep) -> dict[str, Any]:
    return {
        "step": step.step,
        "entry": step.entry,
        "server": step.server,
        "tool": step.tool,
        "summary": step.summary,
    }


def _closure(chosen: set[str], relied_on_by: dict[str, set[str]]) -> set[str]:
    """The chosen steps and every step that (transitively) relied on one of them."""
    closure, frontier = set(chosen), list(chosen)
    while frontier:
        for later in relied_on_by.get(frontier.pop(), set()):
            if later not in closure:
                closure.add(later)
                frontier.append(later)
    return closure


def _read_since(store: RunStore, run_id: str, planned: Sequence[Step]) -> list[ReadSince]:
    """Calls of other runs that read a resource this plan would change, after it changed."""
    changed = [(s.resource, s.entry.time) for s in planned if s.resource]
    if not changed:
        return []
    found: list[ReadSince] = []
    for other in store.runs():
        if other.id == run_id:
            continue
        for entry in store.entries(other.id):
            if entry.kind != "call":
                continue
            for resource, since in changed:
                through = _reads(entry, resource)
                if through is not None and entry.time >= since:
                    found.append(
                        ReadSince(
                            run=other.id,
                            entry=entry.id,
                            agent=other.agent,
                            server=str(entry.body.get("server", "")),
                            tool=str(entry.body.get("tool", "")),
                            time=entry.time,
                            resource=resource,
                            through=through,
                        )
                    )
                    break
    return found


def _reads(entry: Entry, resource: str) -> str | None:
    """How ``entry`` touched ``resource``: declared ``uses``, or an argument naming it."""
    journal = entry.body.get("journal")
    effect = journal.get("effect") if isinstance(journal, dict) else None
    if isinstance(effect, dict):
        declared = effect.get("uses")  # the server's, verified or not: read only where it is a list
        uses = (
            [u.get("resource") for u in declared if isinstance(u, dict)] if isinstance(declared, list) else []
        )
        if resource in uses or effect.get("resource") == resource:
            return "uses"
    names = {resource, resource.rstrip("/").rsplit("/", 1)[-1]}
    arguments = entry.body.get("arguments")
    stack: list[Any] = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and item in names:
            return "arguments"
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
