"""Remedies (protocol.md §9): for what can't be undone, a new action with its own approval.

A remedy is never performed by itself. ``hatp-recorder remedy RUN/eN`` records an ask for the
remedying call, naming the entry it fixes (``remedies: "eN"``); once approved, the call is made
and journaled in the same Run Record, its entry naming the ask and the entry it remedies.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.intake.downstream_errors import DownstreamError
from hatp_journal.recorder.intake.journal_objects import take_in
from hatp_journal.recorder.intake.tokens import Kept, misplaced, new_call, redact, refused_journal
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.entry_bodies import DecisionBody, read_own
from hatp_journal.recorder.record.written_bodies import CallRecord, Outcome
from hatp_journal.recorder.runs.asks import Ask, Asks
from hatp_journal.recorder.undo.errors import UndoCode, UndoError

if TYPE_CHECKING:  # only named here: deciding whether an ask is a remedy loads no MCP stack
    from hatp_journal.recorder.undo.servers import UndoServers


def ask_remedy(
    store: RunStore,
    ref: str,
    *,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    by: str,
    policy: Policy,
    now: datetime,
    within: timedelta | None = None,
) -> Entry:
    """Record an ask for a remedying call of the entry ``RUN/eN``, which must be irreversible."""
    run_id, _, entry_id = ref.rpartition("/")
    try:
        run = store.run(run_id)
        fixed = store.entry(run_id, entry_id)
    except (UnknownRun, UnknownEntry):
        raise UndoError(UndoCode.UNKNOWN_ENTRY, f"there is no entry {ref!r}") from None
    step = next((s for s in steps_of(store.entries(run_id)) if s.id == fixed.id), None)
    if step is None or step.kind not in ("none", "unknown"):
        what = "not a call" if step is None else f"a {step.kind} step"
        raise UndoError(
            UndoCode.NOT_A_REMEDY, f"{ref} is {what}; remedies are for calls that can't be undone"
        )
    body = CallRecord.model_construct(
        agent=by,
        principal=run.principal,
        server=server,
        tool=tool,
        arguments=arguments,
        arguments_digest=sha256_digest(arguments),
        remedies=fixed.id,
        decision={
            "action": "ask",
            "reasons": [
                {"code": "REMEDY", "detail": f"a remedy for {fixed.id}: a new action, approved on its own"}
            ],
            "policyDigest": policy.digest(),
        },
    )
    approver = policy.autonomy.approver or policy.undo_authority or "unassigned"
    return Asks(store).open(run_id, body.wire(), now=now, approver=approver, within=within)


def is_remedy(ask: Ask) -> bool:
    """Whether an ask is for a remedy (rather than an agent's call)."""
    return ask.state != "unreadable" and ask.terms.remedies is not None


async def perform_remedy(store: RunStore, ask: Ask, servers: UndoServers) -> Entry:
    """Make the approved remedying call and journal it; a failure is journaled too."""
    if ask.state != "approved" or ask.decision is None:
        raise UndoError(UndoCode.PLAN_NOT_APPROVED, f"{ask.ref} is {ask.state}, not approved")
    asked = ask.terms
    call = CallRecord(
        agent=asked.agent,
        principal=asked.principal,
        server=asked.server,
        tool=asked.tool,
        arguments=asked.arguments,
        arguments_digest=asked.arguments_digest,
        remedies=asked.remedies,
        decision={"action": "approved", "by": read_own(DecisionBody, ask.decision).approval.by},
    )
    try:
        bound = new_call(ask.run)
        downstream, result = await servers.call(call.server, call.tool, call.arguments, bound)
    except DownstreamError as error:
        failed = call.model_copy(update={"outcome": Outcome(status="failed", error=str(error))})
        return Asks(store).settle(ask.run, ask, "call", failed.wire())
    astray = misplaced(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    if astray is not None:  # a token anywhere but its place: nothing of the object is kept
        members = refused_journal(astray)
        tokens: list[Kept] = []
    else:
        intake = take_in(
            result.meta,
            tool=call.tool,
            arguments=call.arguments,
            server_keys=downstream.keys,
            declared_kind="unknown",
            call=bound,
        )
        journal, tokens = redact(downstream.name, intake.raw)
        members = {"intake": intake.wire(), "journal": journal}
    outcome = Outcome(status="error" if result.is_error else "ok")
    done = call.model_copy(update={**members, "outcome": outcome})
    return Asks(store).settle(ask.run, ask, "call", done.wire(), tokens=tokens)
