"""What a person can do about an undo, whichever face they use (``hatp-recorder`` or the web page).

Both faces call these, so a plan asked for on a page and one asked for on the command line are
built, recorded, approved and run by exactly the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hatp_journal.recorder.changes.plan import ReversalPlan
from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.config import ConfigError, RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy, load_policy
from hatp_journal.recorder.record import Entry, RunStore, UnknownRun
from hatp_journal.recorder.runs.asks import DecisionOutcome
from hatp_journal.recorder.tracing import traced
from hatp_journal.recorder.undo.approval import PlanAsk, decide_plan, find_plan, record_plan
from hatp_journal.recorder.undo.authority import AuthorityNow
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.execute import execute_plan
from hatp_journal.recorder.undo.planner import UndoRequest, build_plan
from hatp_journal.toolkit.signing import SigningKey

if TYPE_CHECKING:  # only named here: commands that read the record should not load the MCP stack
    from hatp_journal.recorder.undo.servers import UndoServers


@traced(
    "hatp.plan",
    lambda a: {"run": a["run_id"], "by": a["by"]},
    result=lambda ask: {"plan": ask.ref},
)
async def ask_for_plan(
    store: RunStore,
    policy: Policy,
    directory: Directory,
    servers: UndoServers,
    run_id: str,
    request: UndoRequest,
    *,
    by: str,
    now: datetime,
) -> PlanAsk:
    """Check who asks, build the Reversal Plan and record it as an ask to the ``undoAuthority``."""
    try:
        run = store.run(run_id)
    except UnknownRun:
        raise UndoError(UndoCode.UNKNOWN_RUN, f"there is no run {run_id!r}") from None
    authority = undo_authority(policy)
    if by != run.principal and by not in directory.holders(authority):
        raise UndoError(
            UndoCode.NOT_PERMITTED,
            f"{by} is neither the run's principal ({run.principal}) nor holds {authority}",
        )
    refuse_if_requested(store, run.id, request)
    planned = await build_plan(
        store,
        run.id,
        request,
        requested_by=by,
        undo_authority=authority,
        check=servers.check,
        now=now,
        boot=servers.launch,
    )
    if not planned.plan.steps and not planned.plan.conflicts:  # nothing a person could approve
        plan = planned.plan
        raise UndoError(UndoCode.NOTHING_TO_UNDO, nothing_to_undo(plan), kept_steps(plan), unfiled=plan)
    return record_plan(store, planned, now=now, within=decide_within(policy))


def refuse_if_requested(store: RunStore, run_id: str, request: UndoRequest) -> None:
    """UNDO_ALREADY_REQUESTED when a plan for some of the steps asked for still waits for a decision."""
    entries = store.entries(run_id)
    count = len(steps_of(entries))
    chosen = request.chosen(count)
    for entry in entries:
        if entry.kind != "plan":
            continue
        pending = find_plan(store, f"{run_id}/{entry.id}")
        if pending.state == "pending" and chosen & asked_steps(pending.plan.request, count):
            raise UndoError(
                UndoCode.UNDO_ALREADY_REQUESTED,
                f"plan {pending.ref} for some of these steps waits for a person's decision: "
                "approve or deny it first",
            )


def asked_steps(request: str, count: int) -> set[int]:
    """The step numbers a recorded plan's request (``from 3``, ``steps 2, 5``) asked for."""
    if request.startswith("from "):
        return set(range(int(request.removeprefix("from ")), count + 1))
    return {int(n) for n in request.removeprefix("steps ").split(", ") if n.isdigit()}


def kept_steps(plan: ReversalPlan) -> dict[str, list[dict[str, Any]]]:
    """Every step a plan keeps, by section, each with its reason: what an agent reads of why."""
    return {
        "notReversible": [
            {"step": n.step, "reason": n.reason, "remedy": n.remedy} for n in plan.not_reversible
        ],
        "blocked": [
            {"step": b.step, "reason": "relied on by " + ", ".join(b.kept_for)} for b in plan.blocked
        ],
        "expired": [{"step": e.step, "reason": f"undo window closed {e.undo_by}"} for e in plan.expired],
        "unresolved": [{"step": u.step, "reason": u.reason} for u in plan.unresolved],
        "alreadyReversed": [{"step": a.step, "reason": "already undone"} for a in plan.already_reversed],
        "changedNothing": [{"step": c.step, "reason": c.reason} for c in plan.changed_nothing or []],
    }


_KEPT_WORDS = {
    "notReversible": "cannot be undone",
    "blocked": "kept",
    "expired": "too late",
    "unresolved": "unresolved",
    "alreadyReversed": "already undone",
    "changedNothing": "changed nothing",
}


def nothing_to_undo(plan: ReversalPlan) -> str:
    """One line: nothing can be undone, and why for each step asked for."""
    why = [
        f"step {item['step']} ({_KEPT_WORDS[section]}: {item['reason']})"
        if section != "alreadyReversed"
        else f"step {item['step']} (already undone)"
        for section, items in kept_steps(plan).items()
        for item in items
    ]
    return f"nothing of {plan.request} can be undone, so no plan was filed" + (
        ": " + "; ".join(why) if why else ""
    )


@traced(
    "hatp.approval",
    lambda a: {"plan": a["ref"], "decision": a["decision"], "by": a["person"]},
    result=lambda outcome: {"counted": outcome.counted},
)
async def decide_on_plan(
    store: RunStore,
    policy: Policy,
    directory: Directory,
    servers: UndoServers,
    ref: str,
    decision: Literal["approve", "deny"],
    *,
    person: str,
    key: SigningKey,
    overrides: Sequence[str],
    now: datetime,
) -> DecisionOutcome:
    """Sign ``person``'s decision; an approval counts only if the plan built again now is the same."""
    ask = find_plan(store, ref)
    fresh = await replan(store, ask.plan, servers, now) if decision == "approve" else None
    return decide_plan(
        store,
        ref,
        decision,
        person=person,
        key=key,
        directory=directory,
        undo_authority=policy.undo_authority,
        fresh=fresh,
        overrides=overrides,
        now=now,
    )


@traced("hatp.undo", lambda a: {"plan": a["ref"]}, result=lambda entry: {"entry": entry.id})
async def run_plan(
    store: RunStore, ref: str, servers: UndoServers, now: datetime, authority: AuthorityNow
) -> Entry:
    """Run (or resume) the approved plan ``ref``, its approver checked against ``authority``."""
    ask = find_plan(store, ref)

    async def again() -> ReversalPlan:
        return await replan(store, ask.plan, servers, now)

    return await execute_plan(store, ref, compensate=servers.compensate, replan=again, authority=authority)


async def replan(store: RunStore, shown: ReversalPlan, servers: UndoServers, now: datetime) -> ReversalPlan:
    """The plan built again now, from the same request, to compare with what was shown."""
    request = shown.request
    if request.startswith("from "):
        again = UndoRequest(from_step=int(request.removeprefix("from ")))
    else:
        again = UndoRequest(steps=tuple(int(n) for n in request.removeprefix("steps ").split(", ")))
    planned = await build_plan(
        store,
        shown.run,
        again,
        requested_by=shown.requested_by,
        undo_authority=shown.undo_authority,
        check=servers.check,
        now=now,
        boot=servers.launch,
    )
    return planned.plan


def undo_authority(policy: Policy) -> str:
    """Who may approve an undo; NO_UNDO_AUTHORITY when the policy names nobody."""
    if policy.undo_authority is None:
        raise UndoError(
            UndoCode.NO_UNDO_AUTHORITY, "the policy names no undoAuthority: nobody may approve an undo"
        )
    return policy.undo_authority


def decide_within(policy: Policy) -> timedelta | None:
    """How long an approver has to decide, if the policy says."""
    seconds = policy.autonomy.decide_within_seconds
    return None if seconds is None else timedelta(seconds=seconds)


def load_directory(config: RecorderConfig) -> Directory:
    """The organisation's directory, read again now (authority is checked as it is at decision time)."""
    if config.recorder.directory is None:
        raise ConfigError("[recorder] directory is not set: nobody can ask for or approve an undo")
    return Directory.load(Path(config.recorder.directory))


def authority_now(config: RecorderConfig) -> AuthorityNow:
    """The directory and policy of ``config``, read from their files again at every call."""

    def now() -> tuple[Directory, Policy]:
        return load_directory(config), load_policy(
            Path(config.recorder.policy), directory=config.recorder.directory
        )

    return now


def display_name(directory: Directory, person_id: str) -> str:
    """A person's name for people to read, or their id."""
    person = directory.person(person_id)
    return person.name if person is not None and person.name else person_id
