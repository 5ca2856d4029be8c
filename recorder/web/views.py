"""What the pages show, computed from the Run Record at the moment a page is read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal._shared.text import json_for_people
from hatp_journal.recorder.changes.plan import ReversalPlan
from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import (
    AskDecision,
    CallBody,
    OutcomeAsSent,
    ReversalBody,
    read_as,
    reversed_entries,
)
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.recorder.runs.addresses import addresses
from hatp_journal.recorder.runs.asks import Ask
from hatp_journal.recorder.runs.class_words import class_words
from hatp_journal.recorder.runs.preview_words import preview_words
from hatp_journal.recorder.undo.approval import PlanAsk


def time_left(until: str | None, now: datetime) -> str:
    """``2d 3h left``, ``14m left`` or ``closed``: a countdown as people read it."""
    if until is None:
        return "no window"
    if not is_wire_time(until):
        return "unreadable time"
    seconds = int((parse_wire_time(until) - now).total_seconds())
    if seconds <= 0:
        return "closed"
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes = max(rest // 60, 1) if not (days or hours) else rest // 60
    parts = [f"{days}d"] * bool(days) + [f"{hours}h"] * bool(hours) + [f"{minutes}m"] * (not days)
    return " ".join(parts) + " left"


def clock_time(wire: str) -> str:
    """``18:15 UTC`` from a wire time (what was recorded, as it was, when it is not one)."""
    return parse_wire_time(wire).strftime("%H:%M UTC") if is_wire_time(wire) else str(wire)


def day_time(wire: str) -> str:
    """``Thu 3 Dec 18:15 UTC`` from a wire time (what was recorded, as it was, when it is not one)."""
    if not is_wire_time(wire):
        return str(wire)
    at = parse_wire_time(wire)
    return f"{at:%a} {at.day} {at:%b %H:%M} UTC"


@dataclass(frozen=True)
class AskView:
    """One pending call ask as the Asks page shows it."""

    ref: str
    call: str
    arguments: str
    declared: str
    rclass: str  # the reversibility class in words, "R2 (compensable at a known cost)"
    reaches: list[str]  # the addresses the arguments name: who mail or an invitation would go to
    reasons: list[str]
    totals: list[str]
    approver: str
    holders: list[str]
    decide_by: str
    left: str
    in_doubt: tuple[tuple[str, str], ...] = ()  # earlier approvals of the call in doubt: (ref, what is known)
    preview: str = ""  # what the server says the call would do (its effect preview), in words


@dataclass(frozen=True)
class DoubtLine:
    """An approved call claimed by a Recorder that died before recording it (``hatp-recorder asks``
    lists it too): the approver sees what became of their approval."""

    ref: str
    call: str
    what: str


def ask_view(
    ask: Ask, directory: Directory, now: datetime, in_doubt: Sequence[tuple[str, str]] = ()
) -> AskView:
    """A readable ask as the pages show it (an unreadable one is named by :func:`unreadable_line`);
    ``in_doubt``: earlier approvals of the same call that a dead Recorder left in doubt."""
    terms = ask.terms
    decision = terms.decision or AskDecision()
    return AskView(
        ref=ask.ref,
        call=f"{terms.server}.{terms.tool}",
        arguments=json_for_people(terms.arguments, indent=2),  # a bidi override can't turn it around
        declared=terms.declared or "unknown",
        rclass=class_words(decision.rclass),
        reaches=list(dict.fromkeys(addresses(terms.arguments))),
        reasons=[f"{r.code}: {r.detail}" for r in decision.reasons],
        totals=[_total(cap, values) for cap, values in decision.totals.items()],
        approver=terms.approver,
        holders=[_name(directory, p) for p in directory.holders(terms.approver)],
        decide_by=ask.decide_by,
        left=time_left(ask.decide_by, now),
        in_doubt=tuple(in_doubt),
        preview=preview_words(terms.preview),
    )


def _total(cap: str, values: dict[str, Any]) -> str:
    shown = ", ".join(f"{k} {v}" for k, v in values.items())
    return f"{cap}: {shown}"


@dataclass(frozen=True)
class UnreadableLine:
    """An ask or plan the pages cannot show: which, and what did not fit (never its contents)."""

    ref: str
    what: str


def unreadable_line(ask: Ask | PlanAsk) -> UnreadableLine:
    marker = ask.unreadable
    return UnreadableLine(ask.ref, marker.text() if marker is not None else "unreadable")


@dataclass(frozen=True)
class PlanLine:
    """One pending plan on the Asks page."""

    ref: str
    request: str
    steps: int
    conflicts: int
    decide_by: str
    left: str


def plan_line(ask: PlanAsk, now: datetime) -> PlanLine:
    plan = ask.plan
    decide_by = ask.decide_by
    return PlanLine(
        ask.ref, plan.request, len(plan.steps), len(plan.conflicts), decide_by, time_left(decide_by, now)
    )


@dataclass(frozen=True)
class ReviewLine:
    """One step of a run in the review: can it still be undone, and until when."""

    number: int
    entry: str
    summary: str
    kind: str
    undo_by: str | None
    left: str
    open: bool
    note: str
    code: str | None = None  # set when the call's entry could not be read (shown as unreadable)
    rclass: str = ""  # the reversibility class the policy decided it by (R0…R4), if recorded
    by_host: bool = False  # undone by the host, not the server (host-declared compensation)


def review(entries: list[Entry], now: datetime) -> tuple[list[ReviewLine], list[ReviewLine]]:
    """(reversible steps sorted by earliest ``undoBy``, closed ones marked; the rest of the run)."""
    undone = reversed_entries(entries)
    windows, others = [], []
    for step in steps_of(entries):
        if step.kind == "compensate" and step.id not in undone:
            left = time_left(step.undo_by, now)
            line = ReviewLine(
                step.number, step.id, step.summary, step.kind, step.undo_by, left, left != "closed", ""
            )
            windows.append(replace(line, rclass=_class_of(step.entry), by_host=step.by_host))
        else:
            note = "already undone" if step.id in undone else (step.reason or step.kind)
            line = ReviewLine(step.number, step.id, step.summary, step.kind, None, "", False, note, step.code)
            others.append(replace(line, rclass=_class_of(step.entry)))
    windows.sort(key=lambda line: (line.undo_by or "9999", line.number))
    return windows, others


CLASS_WORDS = {
    "R0": "no effect",
    "R1": "restorable",
    "R2": "undone at a known cost, or noticed by others",
    "R3": "hard to recover",
    "R4": "cannot be undone",
}
"""A reversibility class in words (docs/policy.md has the rules that give each)."""


@dataclass(frozen=True)
class TimelineLine:
    """One step of a run, in the order it happened, with where it stands now."""

    number: int
    entry: str
    at: str
    call: str
    summary: str
    rclass: str
    class_words: str
    undo_by: str | None
    left: str
    state: str  # open, expired, undone, conflicted, failed, not reversible, read, unresolved, …
    can_plan: bool  # an undo from this step can be planned now (its window is open)


def timeline(entries: list[Entry], now: datetime) -> list[TimelineLine]:
    """Every step of a run in order: class, summary, undo deadline and state, as the record says now.

    A step's state is what the latest Reversal Record said of it (undone, conflicted, failed…);
    otherwise an undoable step is open until its window closes (then expired), and the rest say
    what they are (not reversible, read, unresolved).
    """
    said = _last_reversal_status(entries)
    lines = []
    for step in steps_of(entries):
        rclass = _class_of(step.entry)
        left = time_left(step.undo_by, now) if step.kind == "compensate" else ""
        status = said.get(step.id)
        if status is not None:
            state = TIMELINE_STATES.get(status, status)
        elif step.kind == "compensate":
            state = "expired" if left == "closed" else "open"
        else:
            state = TIMELINE_STATES.get(step.kind, step.kind)
        lines.append(
            TimelineLine(
                number=step.number,
                entry=step.id,
                at=step.entry.time,
                call=f"{step.server}.{step.tool}",
                summary=step.summary,
                rclass=rclass,
                class_words=CLASS_WORDS.get(rclass, ""),
                undo_by=step.undo_by if step.kind == "compensate" else None,
                left=left,
                state=state,
                can_plan=state in ("open", "conflicted", "failed") and left not in ("closed", ""),
            )
        )
    return lines


TIMELINE_STATES = {
    "reversed": "undone",
    "conflict": "conflicted",
    "notReversible": "not reversible",
    "none": "not reversible",
    "unknown": "not reversible",
    "read": "read",
    "no-effect": "changed nothing",
    "unresolved": "unresolved",
    "blocked": "kept: a later step relies on it",
}
"""What a Reversal Record's status or a step's kind reads as on the timeline."""


def _last_reversal_status(entries: list[Entry]) -> dict[str, str]:
    """Each step's status in the latest Reversal Record that names it."""
    said: dict[str, str] = {}
    for entry in entries:
        if entry.kind == "reversal":
            body = read_as(ReversalBody, entry)
            if isinstance(body, ReversalBody):
                said.update({line.entry: line.status for line in body.steps})
    return said


def _class_of(entry: Entry) -> str:
    """The reversibility class recorded with a call's decision, or "" (older records, refusals)."""
    call = read_as(CallBody, entry)
    decision = call.decision if isinstance(call, CallBody) else None
    verdict = decision.reversibility if decision is not None else None
    return verdict.rclass or "" if verdict is not None else ""


@dataclass(frozen=True)
class UndoProgress:
    """One step of an undo still running: what it undoes and how far it got."""

    step: int
    entry: str
    undo: str
    state: str  # waiting, compensating, or what the tool server answered (done, conflict, failed…)


def undo_steps(
    plan: ReversalPlan, intents: dict[str, Entry], outcomes: dict[str, Entry]
) -> list[UndoProgress]:
    """The steps the undo may compensate, newest first, each with its state in the record so far."""
    items = [(s.step, s.entry, s.undo) for s in plan.steps]
    items += [(c.step, c.entry, c.undo) for c in plan.conflicts]
    return [
        UndoProgress(step, entry, undo, _state(entry, intents, outcomes))
        for step, entry, undo in sorted(items, reverse=True)
    ]


def _state(entry: str, intents: dict[str, Entry], outcomes: dict[str, Entry]) -> str:
    outcome = outcomes.get(entry)
    if outcome is not None:
        sent = read_as(OutcomeAsSent, outcome)
        answer = sent.answer if isinstance(sent, OutcomeAsSent) else None
        return str(answer.get("status", "answered")) if isinstance(answer, dict) else "failed"
    return "compensating" if entry in intents else "waiting"


def _name(directory: Directory, person_id: str) -> str:
    person = directory.person(person_id)
    return f"{person.name} ({person_id})" if person is not None and person.name else person_id


# -- plain words ------------------------------------------------------------------------------

# What a step's status in a Reversal Record (or an undo under way) means, for people; the code
# itself stays on the page as the title (hover) and in data-status.
STATUS_WORDS = {
    "reversed": "undone",
    "notReversible": "cannot be undone",
    "conflict": "kept: changed since",
    "failed": "failed",
    "expired": "too late",
    "unresolved": "not checked",
    "blocked": "kept: a later step relies on it",
    "waiting": "waiting",
    "compensating": "being undone",
    "done": "undone",
}


def status_words(code: object) -> str:
    """``cannot be undone`` for ``notReversible``: a status code as people read it."""
    return STATUS_WORDS.get(str(code), str(code))


def request_words(request: str) -> str:
    """``everything from step 1 on`` for ``from 1``: what was asked to be undone, in words."""
    if request.startswith("from "):
        return f"everything from step {request.removeprefix('from ')} on"
    return request
