"""The approver's authority, checked again before an approved undo runs, resumes, and compensates a step.

An approval is checked against the directory and the policy when it is made (``approval.py``). The
undo may run much later (resumed after a crash, started in the web approver's background) and a run
can be long, so before it starts and before each compensation the person who signed the counted
approval must still be listed in the directory as it is now, still hold the policy's
``undoAuthority`` as it is now, and the key that signed the approval must still be theirs there.

If not, the undo halts for good: nothing more is compensated, one ``undo-halted`` entry says why
(however often it is run again), and what already ran stays recorded. The way on is a new plan,
approved by someone who holds the authority now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import ValidationError

from hatp_journal.recorder.directory import Directory, DirectoryError
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import DecisionBody, HaltedBody, read_as, read_own
from hatp_journal.recorder.record.written_bodies import HaltedRecord
from hatp_journal.recorder.undo.approval import PlanAsk
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.toolkit.signing import verify
from hatp_journal.toolkit.wire import Receipt

AuthorityNow = Callable[[], tuple[Directory, Policy]]
"""The organisation's directory and policy as they are now: read again at every call."""

HALTED: Final = "undo-halted"

Check = Literal["undoAuthority", "listed", "role", "key"]


@dataclass(frozen=True)
class Refusal:
    """Which check the approval no longer passes (stable, for the record), and why (for people)."""

    check: Check
    reason: str


def approver_refusal(ask: PlanAsk, directory: Directory, policy: Policy) -> Refusal | None:
    """Why the counted approval of ``ask`` no longer carries undo authority; None if it still does."""
    decision = ask.decision
    if decision is None:  # pragma: no cover - only approved plans run
        raise AssertionError(f"{ask.ref} has no counted decision")
    decided = read_own(DecisionBody, decision)
    person = decided.approval.by
    role = policy.undo_authority
    if role is None:
        return Refusal("undoAuthority", "the policy names no undoAuthority now: nobody may approve an undo")
    listed = directory.person(person)
    if listed is None:
        return Refusal("listed", f"{person} is no longer in the directory")
    if person not in directory.holders(role):
        return Refusal("role", f"{person} no longer holds {role}")
    try:
        receipt = Receipt.model_validate(decided.receipt)
        key = listed.verify_key()
    except ValidationError:
        return Refusal("key", f"the approval's receipt ({decision.id}) is not a receipt")
    except DirectoryError as error:
        return Refusal("key", str(error))
    # The listed key must verify the approval itself, as recorded, not merely carry the same key id.
    signed = {"approval": decided.approval.model_dump(by_alias=True, exclude_unset=True)}
    if not verify(receipt, signed, {key.kid: key}):
        why = f"the key that signed the approval ({receipt.kid}) is no longer {person}'s key in the directory"
        return Refusal("key", why)
    return None


def halt_of(entries: Sequence[Entry], plan: str) -> Entry | None:
    """The ``undo-halted`` entry of ``plan`` (its id in the run), if its undo was halted."""
    for entry in entries:
        halt = read_as(HaltedBody, entry) if entry.kind == HALTED else None
        if isinstance(halt, HaltedBody) and halt.plan == plan:
            return entry
    return None


def halt_unless_authorized(
    store: RunStore, ask: PlanAsk, authority: AuthorityNow, *, before: str | None = None
) -> None:
    """Raise APPROVER_NO_LONGER_AUTHORIZED, after recording why, unless the approval still counts.

    ``before`` names the step the undo was about to compensate (None: before it started).
    The caller holds the run's undo lease and has checked that no halt is recorded yet.
    """
    directory, policy = authority()
    refusal = approver_refusal(ask, directory, policy)
    if refusal is None:
        return
    assert ask.decision is not None
    body = HaltedRecord(
        plan=ask.entry.id,
        code=str(UndoCode.APPROVER_NO_LONGER_AUTHORIZED),
        by=read_own(DecisionBody, ask.decision).approval.by,
        decision=ask.decision.id,
        check=refusal.check,
        reason=refusal.reason,
        before=before,
    )
    entry = store.append(ask.run, HALTED, body.wire())
    store.checkpoint(ask.run, HALTED)
    raise halted(ask, entry)


def halted(ask: PlanAsk, halt: Entry) -> UndoError:
    """The error an undo halted by ``halt`` reports, now and on every later try."""
    body = read_as(HaltedBody, halt)
    said = body if isinstance(body, HaltedBody) else HaltedBody(plan=ask.entry.id, reason=body.text())
    where = f" before {said.before}" if said.before else ""
    return UndoError(
        UndoCode.APPROVER_NO_LONGER_AUTHORIZED,
        f"{ask.ref} was halted{where} ({ask.run}/{halt.id}): {said.reason}. Nothing more is "
        "compensated; what already ran stays in the Run Record. To undo the rest, plan again and have "
        "the new plan approved by someone who holds undo authority now",
    )
