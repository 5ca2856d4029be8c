"""Planning an undo (protocol.md §9 steps 1-3): dependency closure, a ``check`` of each step, the plan.

Nothing here changes a tool server: ``check`` is a dry run. The same request planned twice
against an unchanged world gives the same plan, byte for byte, which is how a stale approval
is caught (:func:`build_plan` is run again before approval and before execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

import anyio

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.recorder.changes.links import dependents, kept_for
from hatp_journal.recorder.changes.plan import (
    AlreadyReversed,
    Blocked,
    ChangedNothing,
    Conflict,
    Expired,
    NotReversible,
    ReadSince,
    ReversalPlan,
    UndoStep,
    Unresolved,
)
from hatp_journal.recorder.changes.steps import Chains, Step, steps_of
from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.record.call_search import calls_naming
from hatp_journal.recorder.record.entry_bodies import (
    CallBody,
    Unreadable,
    read_as,
    read_check_answer,
    reversed_entries,
)
from hatp_journal.recorder.record.gc_pause import gc_frozen, gc_paused
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.several import several_conflicts
from hatp_journal.toolkit.wire import FieldChange, UndoAnswer


class CheckUnavailable(Exception):
    """The step's tool server could not answer ``check`` (unreachable, unverifiable answer);
    ``code`` when the Recorder refused the answer (``ANSWER_REFUSED``)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


ReadThrough = Literal["uses", "arguments"]

Check = Callable[[Step], Awaitable[dict[str, Any]]]
"""Asks a step's tool server for ``check``; returns its verified answer or raises CheckUnavailable."""
Boot = Callable[[list[str]], Awaitable[None]]
"""Starts the named tool servers' processes (their sessions are opened by the first check)."""


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
    boot: Boot | None = None,
) -> PlannedUndo:
    """Plan undoing ``request`` in ``run_id``; every compensable step is checked with its server
    (``boot``, if given, starts the servers the checks need first, so that they start together)."""
    with gc_paused():  # reading and linking every entry makes many small objects, none of them garbage
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
        # A step the host undoes has no server to remember its reversal: the Run Record does.
        host_done = {s.id for s in planned if s.by_host} & reversed_entries(entries)
        # Undone already, such a step left the resource as it found it: no link of its chain (a
        # later write that starts where the write before it left is the run's own, not a gap).
        chains = Chains(s for s in planned if s.id not in host_done)
    with gc_frozen():  # the entries and steps just read sit out the collections the checks cause
        checked = [s for s in planned if _needs_check(s, now) and s.id not in host_done]
        answers = await check_all(checked, check, boot)
        with gc_paused():
            found = Sections()
            checks: dict[str, dict[str, Any]] = {}
            for step in planned:  # newest first
                if step.id in host_done:
                    found.already_reversed.append(AlreadyReversed(**_step_item(step)))
                    continue
                _place(found, step, chains, answers, checks, now)
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
                changed_nothing=_changed_nothing(by_id[e] for e in closure),
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


CHECKS_PER_SERVER = 8
"""How many ``check`` calls may wait on one tool server at once while planning."""


async def check_all(
    steps: Sequence[Step], check: Check, boot: Boot | None = None
) -> dict[str, dict[str, Any] | CheckUnavailable]:
    """Every step's ``check`` answer (or why it could not run), at most :data:`CHECKS_PER_SERVER`
    at a time per server.

    A server's checks run one by one in this task until one is answered: that one opened the
    server's session, which must be opened (and later closed) by the task that owns the undo's
    connections. The rest of its checks then run together. ``boot`` is given every server first:
    their processes then start together, rather than each when the one before it has answered.
    """
    answers: dict[str, dict[str, Any] | CheckUnavailable] = {}
    if boot is not None and steps:
        await boot(list(dict.fromkeys(step.server for step in steps)))

    async def one(step: Step) -> None:
        try:
            answers[step.id] = await check(step)
        except CheckUnavailable as error:
            answers[step.id] = error

    by_server: dict[str, list[Step]] = {}
    for step in steps:
        by_server.setdefault(step.server, []).append(step)
    waiting: list[list[Step]] = []  # per server, the checks after its first answered one
    for group in by_server.values():
        for place, step in enumerate(group):
            await one(step)
            if not isinstance(answers[step.id], CheckUnavailable):
                waiting.append(group[place + 1 :])
                break

    async def worker(queue: Iterator[Step]) -> None:
        for step in queue:  # the workers of one server share its queue
            await one(step)

    async with anyio.create_task_group() as together:
        for server_steps in waiting:
            queue = iter(server_steps)
            for _ in range(min(CHECKS_PER_SERVER, len(server_steps))):
                together.start_soon(worker, queue)
    return answers


def _needs_check(step: Step, now: datetime) -> bool:
    """Whether planning asks the step's server: a compensable step whose window is still open."""
    return step.kind == "compensate" and not (step.undo_by is not None and now > _undo_by(step.undo_by))


_undo_by = lru_cache(maxsize=256)(parse_wire_time)
"""A run's steps share a few ``undoBy`` times; parsing each once is most of what checking them costs."""


def _changed_nothing(steps: Iterable[Step]) -> list[ChangedNothing] | None:
    """The steps asked for whose call changed nothing, newest first: the plan shows them and never
    runs them; None when there is none (the section is then absent)."""
    nothing = sorted((s for s in steps if s.kind == "no-effect"), key=lambda s: s.number, reverse=True)
    shown = [ChangedNothing(**_step_item(s), reason=s.reason or "changed nothing") for s in nothing]
    return shown or None


def _step_item(step: Step) -> dict[str, Any]:
    """What every section says of a step."""
    return {
        "step": step.number,
        "entry": step.id,
        "server": step.server,
        "tool": step.tool,
        "summary": step.summary,
    }


def _place(
    plan: Sections,
    step: Step,
    chains: Chains,
    answers: Mapping[str, dict[str, Any] | CheckUnavailable],
    checks: dict[str, dict[str, Any]],
    now: datetime,
) -> None:
    """Put one step in the section it belongs to, by its server's ``check`` answer if compensable."""
    item = _step_item(step)
    if _placed_unchecked(plan, step, item):
        return
    if not _needs_check(step, now):
        plan.expired.append(Expired(**item, undo_by=step.undo_by))
        return
    answer = answers[step.id]
    if isinstance(answer, CheckUnavailable):
        plan.unresolved.append(Unresolved(**item, reason=f"check could not run: {answer}", code=answer.code))
        return
    checks[step.id] = answer
    read = read_check_answer(answer)
    if isinstance(read, Unreadable):
        # Signed by its server, yet not of the wire's shape: kept in the plan entry, step unresolved.
        plan.unresolved.append(Unresolved(**item, reason=read.text(), code=read.code))
        return
    status = read.status
    undo = step.undo_text
    after = chains.next(step)
    gap = chains.gap(step)
    message, changes = read.message, list(read.changes)
    if status == "conflict" and read.resources:  # a call that wrote several resources
        ours, after, message, changes = several_conflicts(step, read, chains, answers)
    else:
        ours = (
            status == "conflict"
            and after is not None
            and gap is None
            and _left_as_the_run_left_it(answer, chains.newest(step), answers)
        )
        if status == "conflict" and gap is not None:
            message = f"changed outside the run before {gap.id} (expected {gap.before})"
        elif status == "conflict" and after is not None and not ours:
            message, changes = _attributed(read, after, answers.get(chains.newest(step).id))
    if status == "ok" or ours:
        plan.steps.append(_undo_step(step, item, after.id if ours and after is not None else None))
    elif status == "conflict":
        plan.conflicts.append(
            Conflict(
                **item,
                undo=undo,
                resource=step.resource,
                version_expected=read.version_expected,
                version_found=read.version_found,
                changed_by=read.changed_by,
                changes=changes,
                message=message,
                undone_by="host" if step.by_host else None,
                resources=read.resources,
            )
        )
    elif status == "expired":
        plan.expired.append(Expired(**item, undo_by=read.undo_by or step.undo_by))
    elif status == "done":
        plan.already_reversed.append(AlreadyReversed(**item))
    else:
        why = f"check answered {read.code or status}: {read.message}".rstrip(": ")
        plan.unresolved.append(Unresolved(**item, reason=why))


def _placed_unchecked(plan: Sections, step: Step, item: dict[str, Any]) -> bool:
    """Put a step no ``check`` is asked about (unresolved, or not reversible) in its section."""
    if step.kind == "unresolved":
        plan.unresolved.append(Unresolved(**item, reason=step.reason or "unresolved", code=step.code))
        return True
    if step.kind in ("none", "unknown"):
        kind = "none" if step.kind == "none" else "unknown"
        plan.not_reversible.append(
            NotReversible(**item, kind=kind, reason=step.reason or kind, remedy=step.remedy or None)
        )
        return True
    return False


def _undo_step(step: Step, item: dict[str, Any], after: str | None) -> UndoStep:
    """A step its server said can be undone (``after``: the later step of its chain undone first)."""
    return UndoStep(
        **item,
        undo=step.undo_text,
        side_effects=step.side_effects,
        cost=step.undo.cost if step.undo is not None else None,
        resource=step.resource,
        undo_by=step.undo_by,
        after=after,
        undone_by="host" if step.by_host else None,
    )


def _attributed(
    read: UndoAnswer, after: Step, newest: dict[str, Any] | CheckUnavailable | None
) -> tuple[str, list[FieldChange]]:
    """Who changed what, for a step of a chain whose resource the run itself wrote again later and
    someone changed after the run's newest write: the run's later write is a dependency (undone
    first), and only the fields that changed since the newest write are someone else's change.

    (The step's own check compares with what the step left, so it reports the run's later writes
    and the outside change together, under the outside writer's name.)
    """
    later = read_check_answer(newest) if isinstance(newest, dict) else None
    if not isinstance(later, UndoAnswer) or later.status != "conflict":
        said = f"this run's step {after.number} ({after.id}) changed it later: a dependency, undone first"
        return f"{said}; this step's check: {read.message}", list(read.changes)
    outside = {change.field for change in later.changes}
    own = [change.field for change in read.changes if change.field not in outside]
    words = f"this run's step {after.number} ({after.id}) changed it later" + (
        f" ({', '.join(own)})" if own else ""
    )
    said = ", ".join(f"{change.field} is now {change.now}" for change in later.changes) or "it changed"
    by = f" by {later.changed_by}" if later.changed_by else " outside the run"
    message = f"{words}: a dependency, undone first; then changed{by}: {said}"
    return message, [change for change in read.changes if change.field in outside] or list(later.changes)


def _left_as_the_run_left_it(
    answer: Mapping[str, Any], newest: Step, answers: Mapping[str, dict[str, Any] | CheckUnavailable]
) -> bool:
    """Whether the resource is now as the run's own latest write of it left it.

    Then a step's conflict is the run's own doing: the later writes of its chain (each started
    from the version the one before left, see :meth:`Chains.gap`) are undone first and leave the
    version this step expects. Either this step's server found the latest write's version, or the
    latest write's own check found nothing changed since it (a server may look at a resource
    differently per tool: a created invoice is gone once deleted, the delete finds it in Trash).
    """
    if answer.get("versionFound") == newest.version:
        return True
    latest = answers.get(newest.id)
    return isinstance(latest, dict) and latest.get("status") == "ok"


def _block(plan: Sections, relied_on_by: dict[str, set[str]]) -> None:
    """Keep every step that a staying step relied on (newest first, so it carries backwards), also
    through a step an earlier undo undid (:func:`kept_for`)."""
    staying = {i.entry for i in [*plan.conflicts, *plan.not_reversible, *plan.unresolved, *plan.expired]}
    undone = {a.entry for a in plan.already_reversed}
    kept: set[str] = set()
    for step in plan.steps:  # newest first
        keepers = kept_for(step.entry, relied_on_by, staying, undone)
        if keepers:
            staying.add(step.entry)
            kept.add(step.entry)
            plan.blocked.append(Blocked(**_item(step), undo=step.undo, kept_for=keepers))
    plan.steps[:] = [s for s in plan.steps if s.entry not in kept]


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
    # Each changed resource once: when the plan's oldest step changed it, and its place in the
    # plan (newest first), which decides between two resources one call read.
    since: dict[str, str] = {}
    order: dict[str, int] = {}
    for place, step in enumerate(planned):
        for write in step.writes:
            order.setdefault(write.resource, place)
            since[write.resource] = min(since.get(write.resource, step.entry.time), step.entry.time)
    if not since:
        return []
    by_name: dict[str, set[str]] = {}
    for resource in since:
        for name in (resource, resource.rstrip("/").rsplit("/", 1)[-1]):
            by_name.setdefault(name, set()).add(resource)
    found: list[ReadSince] = []
    runs = {run.id: (place, run) for place, run in enumerate(store.runs())}
    naming = calls_naming(store, by_name.keys(), besides=run_id)
    naming.sort(key=lambda hit: runs[hit[0]][0])  # oldest run first; stable within a run
    for other_id, entry in naming:
        call = read_as(CallBody, entry)
        if not isinstance(call, CallBody):  # an unreadable call names nothing it read
            continue
        touched = [
            (order[resource], resource, through)
            for resource, through in _reads(call, by_name)
            if entry.time >= since[resource]
        ]
        if touched:
            _, resource, through = min(touched)
            found.append(
                ReadSince(
                    run=other_id,
                    entry=entry.id,
                    agent=runs[other_id][1].agent,
                    server=call.server,
                    tool=call.tool,
                    time=entry.time,
                    resource=resource,
                    through=through,
                )
            )
    return found


def _reads(call: CallBody, by_name: Mapping[str, set[str]]) -> list[tuple[str, ReadThrough]]:
    """The changed resources ``entry`` touched and how: declared ``uses`` (or its own resource),
    else an argument naming one (its URI or its last segment)."""
    found: dict[str, ReadThrough] = {}
    journal = call.journal
    effect = journal.get("effect") if isinstance(journal, dict) else None
    if isinstance(effect, dict):
        declared = effect.get("uses")  # the server's, verified or not: read only where it is a list
        listed = declared if isinstance(declared, list) else []
        uses = [u.get("resource") for u in listed if isinstance(u, dict)]
        for resource in [*uses, effect.get("resource")]:
            if isinstance(resource, str) and resource in by_name.get(resource, ()):
                found[resource] = "uses"
    stack: list[Any] = [call.arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            for resource in by_name.get(item, ()):
                found.setdefault(resource, "arguments")
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return list(found.items())
