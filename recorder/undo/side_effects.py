"""Whom an undo step's side effects reach, read from the recorded call: what ``plan``/``undo`` print
and the plan page shows before anyone approves (docs/undo.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import CallBody, Unreadable, read_as, read_journal
from hatp_journal.recorder.runs.addresses import addresses


def recipients(side_effect: str, arguments: object, reported: object = None) -> list[str]:
    """The addresses a side effect reaches, as the call named them: ``attendees get a cancellation
    notice`` and a call with ``attendees: [buyer@globex.com, …]`` → those addresses.

    The declaration says who is told in words (``attendees``); the recorded call's argument of that
    name says who they are, and so does a member of that name the server ``reported`` of what the
    call did (its verified ``effect.fields``: the attendees an event has, though the call named a
    group or none). Empty when no member the sentence names holds an address.
    """
    words = set(re.findall(r"[a-z_]{3,}", side_effect.lower()))
    found: list[str] = []
    for named in (arguments, reported):
        if isinstance(named, dict):
            found += [
                a for name, value in named.items() if str(name).lower() in words for a in addresses(value)
            ]
    return list(dict.fromkeys(found))


def reported_fields(call: CallBody) -> dict[str, Any] | None:
    """What the call's server reported of the resource it left (``effect.fields``), when intake
    verified its journal object; None otherwise."""
    if call.intake is None or call.intake.status != "verified":
        return None
    journal = read_journal(call.journal)
    if isinstance(journal, Unreadable) or journal.effect is None:
        return None
    return journal.effect.fields


@dataclass(frozen=True)
class SideEffect:
    """One side effect of an undo step, with the people it reaches (before anyone approves)."""

    text: str
    recipients: list[str]


def side_effects_of(step: Any, entries: dict[str, Entry]) -> list[SideEffect]:
    """The side effects of a plan step, each naming whom it reaches, read from the recorded call."""
    entry = entries.get(step.entry)
    call = read_as(CallBody, entry) if entry is not None else None
    if not isinstance(call, CallBody):
        return [SideEffect(text, []) for text in step.side_effects]
    reported = reported_fields(call)
    return [SideEffect(text, recipients(text, call.arguments, reported)) for text in step.side_effects]
