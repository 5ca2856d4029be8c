"""Asks: calls the policy held for a person's decision (protocol.md §7, §11).

Everything is derived from the append-only Run Record: an ``ask`` entry, then at most one
counted ``decision`` or a ``withdrawn`` entry (deadline passed), then the entry that used or
reported it. Late clicks are recorded as decisions with ``counted: false`` and change nothing.
The agent learns the outcome by calling again: an approved call is forwarded then.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from pydantic import ConfigDict, StrictBool

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.directory.not_counted import NotCounted
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import (
    AskBody,
    BodyModel,
    CalledTool,
    DecisionBody,
    MentionBody,
    OwnBodyUnreadable,
    ReadCode,
    Unreadable,
    asked_in,
    read_as,
)
from hatp_journal.recorder.record.kinds import EntryKind
from hatp_journal.recorder.record.written_bodies import (
    AskTerms,
    CallApproval,
    CallDecisionRecord,
    WithdrawnRecord,
)
from hatp_journal.recorder.runs.walk import each_run
from hatp_journal.recorder.tracing import traced
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)

AskState = Literal["pending", "approved", "denied", "withdrawn", "used", "unreadable"]
"""``unreadable``: the ask, or the decision that counted for it, does not fit its model (an edited or
hostile store): it is listed as such, never decided, withdrawn or let through."""
DEFAULT_DECIDE_WITHIN = timedelta(hours=4)


def call_digest(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """What an approval of a call signs: exactly this server, tool and arguments."""
    return sha256_digest({"server": server, "tool": tool, "arguments": arguments})


@dataclass(frozen=True)
class RecordedAsk:
    """An entry waiting for a person's decision (a call's ask, or a Reversal Plan), and its state."""

    run: str
    entry: Entry
    state: str
    decision: Entry | None = None

    @property
    def ref(self) -> str:
        """``RUN/eN``: how people name an ask."""
        return f"{self.run}/{self.entry.id}"

    @property
    def decide_by(self) -> str:
        """The recorded deadline."""
        raise NotImplementedError


@dataclass(frozen=True)
class Ask(RecordedAsk):
    """One call's ask and where it stands; ``unreadable`` says what did not fit, when it is."""

    state: AskState
    unreadable: Unreadable | None = None

    @cached_property
    def terms(self) -> AskBody:
        """The ask as recorded; :class:`OwnBodyUnreadable` for one that does not fit."""
        body = read_as(AskBody, self.entry)
        if isinstance(body, Unreadable):
            raise OwnBodyUnreadable(self.entry, body)
        return body

    @property
    def decide_by(self) -> str:
        return self.terms.decide_by

    def marker(self) -> Unreadable:
        """What did not fit, for an unreadable ask."""
        return self.unreadable or Unreadable(code=ReadCode.BODY_UNREADABLE, detail="(the ask)")


@dataclass(frozen=True)
class DecisionOutcome:
    """What happened to a person's decision."""

    counted: bool
    message: str
    entry: Entry
    code: NotCounted | None = None
    """Why it did not count, when it did not."""


class Asks:
    """Opens, decides, withdraws and reads asks in a :class:`RunStore`."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    @traced(
        "hatp.ask",
        lambda a: {"run": a["run"], "approver": a["approver"]},
        result=lambda entry: {"ask": entry.id},
    )
    def open(
        self, run: str, body: dict[str, Any], *, now: datetime, approver: str, within: timedelta | None
    ) -> Entry:
        """Record an ask for the call in ``body`` with its deadline and who may decide."""
        call = CalledTool.model_validate(body)
        terms = AskTerms(
            call_digest=call_digest(call.server, call.tool, call.arguments),
            approver=approver,
            decide_by=wire_time(now + (within or DEFAULT_DECIDE_WITHIN)),
        )
        return self.store.append(run, "ask", {**body, **terms.wire()})

    def all(self, run: str) -> list[Ask]:
        """Every ask of ``run`` with its state."""
        entries = self.store.entries(run)
        followers: dict[str, list[Entry]] = {}
        for entry in entries:
            ask = asked_in(entry) if entry.kind != "ask" else None
            if ask is not None:
                followers.setdefault(ask, []).append(entry)
        return [_state(run, entry, followers.get(entry.id, [])) for entry in entries if entry.kind == "ask"]

    def pending(self) -> list[Ask]:
        """Pending asks across all runs."""
        return [ask for ask in self.listed() if ask.state == "pending"]

    def listed(self) -> list[Ask]:
        """The asks a person is shown across all runs: pending ones, and unreadable ones (named)."""
        walk = each_run(self.store, lambda run: self.all(run.id), logger=_log, doing="listing pending asks")
        return [ask for _, asks in walk for ask in asks if ask.state in ("pending", "unreadable")]

    def find(self, ref: str) -> Ask:
        """The ask named ``RUN/eN``; KeyError if there is none."""
        run, _, entry_id = ref.rpartition("/")
        for ask in self.all(run):
            if ask.entry.id == entry_id:
                return ask
        raise KeyError(f"no ask {ref}")

    def withdraw_overdue(self, run: str, now: datetime, directory: Directory | None) -> list[Entry]:
        """Withdraw every pending ask of ``run`` whose deadline has passed (DEADLINE_EXCEEDED)."""
        withdrawn = []
        for ask in self.all(run):
            if ask.state == "pending" and now > parse_wire_time(ask.decide_by):
                approver = ask.terms.approver
                asked = directory.holders(approver) if directory else []
                body = WithdrawnRecord(
                    ask=ask.entry.id,
                    code="DEADLINE_EXCEEDED",
                    decide_by=ask.decide_by,
                    asked=asked or [approver],
                )
                withdrawn.append(self.store.append(run, "withdrawn", body.wire()))
        return withdrawn

    @traced(
        "hatp.approval",
        lambda a: {"ask": a["ref"], "decision": a["decision"], "by": a["person"]},
        result=lambda outcome: {"counted": outcome.counted, "entry": outcome.entry.id},
    )
    def decide(
        self,
        ref: str,
        decision: Literal["approve", "deny"],
        *,
        person: str,
        key: SigningKey,
        directory: Directory,
        now: datetime,
    ) -> DecisionOutcome:
        """Record ``person``'s decision, signed with their key, if it can still count; an unreadable
        ask raises :class:`OwnBodyUnreadable` (nothing is recorded: nobody can tell what it asks)."""
        ask = self.find(ref)
        self.withdraw_overdue(ask.run, now, directory)
        ask = self.find(ref)
        if ask.state == "unreadable":
            raise OwnBodyUnreadable(ask.entry, ask.marker())
        refusal = directory.refusal(person, ask.terms.approver, key.public)
        approval = CallApproval(
            ask=ref,
            call_digest=ask.terms.call_digest,
            decision=decision,
            by=person,
            at=wire_time(now),
        )
        receipt = key.sign({"approval": approval.wire()}, wire_time(now))
        body = CallDecisionRecord(
            ask=ask.entry.id,
            approval=approval,
            receipt=receipt.wire(),
            directory=self.store.keep_directory(directory.snapshot()),
            counted=False,
        )
        if refusal is not None:
            refused = body.model_copy(update={"why": refusal.why})
            entry = self.store.append(ask.run, "decision", refused.wire())
            return DecisionOutcome(False, f"not counted: {refusal.why}", entry, refusal.code)
        if ask.state != "pending":
            why = _late_reason(ask)
            entry = self.store.append(ask.run, "decision", body.model_copy(update={"why": why}).wire())
            late = NotCounted.DEADLINE_EXCEEDED if ask.state == "withdrawn" else NotCounted.ALREADY_DECIDED
            return DecisionOutcome(False, f"your {decision} was recorded but not counted: {why}", entry, late)
        entry = self.store.append(ask.run, "decision", body.model_copy(update={"counted": True}).wire())
        self.store.checkpoint(ask.run, "approval")
        return DecisionOutcome(True, f"{decision} recorded for {ref}", entry)

    def settle(
        self,
        run: str,
        ask: Ask,
        kind: EntryKind,
        body: dict[str, Any],
        *,
        tokens: Sequence[tuple[str, str, str]] = (),
    ) -> Entry:
        """Record what became of a decided ask (the forwarded call, or the refusal reported)."""
        return self.store.append(run, kind, {**body, "ask": ask.entry.id}, tokens=tokens)


def in_doubt(store: RunStore, run: str) -> dict[str, list[tuple[str, str]]]:
    """The approved calls of ``run`` whose Recorder died after sending them (``CALL_IN_DOUBT``):
    call digest -> [(ask ref, what is known)], for the approver of a new ask for the same call."""
    entries = store.entries(run)
    asks = {e.id: read_as(AskBody, e) for e in entries if e.kind == "ask"}
    digests = {ask: body.call_digest for ask, body in asks.items() if isinstance(body, AskBody)}
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in entries:
        refused = read_as(InDoubt, entry) if entry.kind == "refused" else None
        if isinstance(refused, InDoubt) and refused.code == "CALL_IN_DOUBT" and refused.ask in digests:
            found.setdefault(digests[refused.ask], []).append((f"{run}/{refused.ask}", refused.why))
    return found


class InDoubt(MentionBody):
    """A ``refused`` entry, read for what it says of an approved call in doubt."""

    why: str = ""


def _state(run: str, ask: Entry, followers: list[Entry]) -> Ask:
    body = read_as(AskBody, ask)
    if isinstance(body, Unreadable):
        return Ask(run, ask, "unreadable", unreadable=body)
    counted = [e for e in followers if e.kind == "decision" and read_as(Counted, e) == Counted(counted=True)]
    decision = counted[0] if counted else None
    withdrawn = next((e for e in followers if e.kind == "withdrawn"), None)
    used = any(e.kind in ("call", "refused") for e in followers)
    if used:
        return Ask(run, ask, "used", decision)
    if decision is not None:
        decided = read_as(DecisionBody, decision)
        if isinstance(decided, Unreadable):  # it counted, but for what? Nothing goes on from it.
            why = Unreadable(code=decided.code, detail=f"its decision {decision.id}: {decided.detail}")
            return Ask(run, ask, "unreadable", decision, unreadable=why)
        state: AskState = "approved" if decided.approval.decision == "approve" else "denied"
        return Ask(run, ask, state, decision)
    if withdrawn is not None:
        return Ask(run, ask, "withdrawn", withdrawn)
    return Ask(run, ask, "pending")


class Counted(BodyModel):
    """A ``decision`` read only for whether it counted (``true``, and nothing else, counts)."""

    model_config = ConfigDict(extra="ignore")

    counted: StrictBool | None = None


def _late_reason(ask: Ask) -> str:
    if ask.state == "withdrawn" and ask.decision is not None:
        return f"this closed at {ask.decide_by} because of the deadline"
    return f"this ask was already {ask.state}"
