"""Remedies (protocol.md §9): for what can't be undone, a new action with its own approval.

A remedy is never performed by itself. ``hatp-recorder remedy RUN/eN`` records an ask for the
remedying call, naming the entry it fixes (``remedies: "eN"``); once approved, the call is made
and journaled in the same Run Record, its entry naming the ask and the entry it remedies.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.asks import Ask, Asks
from hatp_journal.recorder.downstream import DownstreamError
from hatp_journal.recorder.intake import take_in
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.entry_bodies import DecisionBody, read_own
from hatp_journal.recorder.tokens import Kept, misplaced, new_call, redact, refused_journal
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.recorder.undo.steps import steps_of


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
    body = {
        "agent": by,
        "principal": run.principal,
        "server": server,
        "tool": tool,
        "arguments": arguments,
        "argumentsDigest": sha256_digest(arguments),
        "remedies": fixed.id,
        "decision": {
            "action": "ask",
            "reasons": [
                {"code": "REMEDY", "detail": f"a remedy for {fixed.id}: a new action, approved on its own"}
            ],
            "policyDigest": policy.digest(),
        },
    }
    approver = policy.autonomy.approver or policy.undo_authority or "unassigned"
    return Asks(store).open(run_id, body, now=now, approver=approver, within=within)


def is_remedy(ask: Ask) -> bool:
    """Whether an ask is for a remedy (rather than an agent's call)."""
    return ask.state != "unreadable" and ask.terms.remedies is not None


async def perform_remedy(store: RunStore, ask: Ask, servers: UndoServers) -> Entry:
    """Make the approved remedying call and journal it; a failure is journaled too."""
    if ask.state != "approved" or ask.decision is None:
        raise UndoError(UndoCode.PLAN_NOT_APPROVED, f"{ask.ref} is {ask.state}, not approved")
    asked = ask.entry.body
    body: dict[str, Any] = {
        key: asked[key]
        for key in ("agent", "principal", "server", "tool", "arguments", "argumentsDigest", "remedies")
    }
    body["decision"] = {"action": "approved", "by": read_own(DecisionBody, ask.decision).approval.by}
    try:
        bound = new_call(ask.run)
        downstream, result = await servers.call(body["server"], body["tool"], body["arguments"], bound)
    except DownstreamError as error:
        body["outcome"] = {"status": "failed", "error": str(error)}
        return Asks(store).settle(ask.run, ask, "call", body)
    astray = misplaced(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    if astray is not None:  # a token anywhere but its place: nothing of the object is kept
        body.update(refused_journal(astray))
        tokens: list[Kept] = []
    else:
        intake = take_in(
            result.meta,
            tool=body["tool"],
            arguments=body["arguments"],
            server_keys=downstream.keys,
            declared_kind="unknown",
            call=bound,
        )
        body["intake"] = intake.wire()
        body["journal"], tokens = redact(downstream.name, intake.raw)
    body["outcome"] = {"status": "error" if result.is_error else "ok"}
    return Asks(store).settle(ask.run, ask, "call", body, tokens=tokens)
