"""A plan names who a side effect reaches from what the server reported, not only from the arguments.

The D-881 kickoff is the example: its calendar call in docs/examples/d881/run-record.json, as recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hatp_journal.recorder.changes.plan import UndoStep
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo.side_effects import recipients, side_effects_of

RECORD = Path(__file__).parents[3] / "docs" / "examples" / "d881" / "run-record.json"
NOTICE = "attendees get a cancellation notice"


def kickoff() -> Entry:
    """Entry e2 of the D-881 Run Record: "Kickoff with Globex", booked with buyer@globex.com."""
    entries = json.loads(RECORD.read_text(encoding="utf-8"))["entries"]
    return Entry.model_validate(next(e for e in entries if e["id"] == "e2"))


def with_body(entry: Entry, **changes: Any) -> Entry:
    return entry.model_copy(update={"body": {**entry.body, **changes}})


def step_of(entry: Entry) -> UndoStep:
    return UndoStep(
        step=2,
        entry=entry.id,
        server="calendar",
        tool="create_event",
        summary="",
        undo="",
        side_effects=[NOTICE],
    )


def reported(entry: Entry, **fields: Any) -> Entry:
    """``entry`` whose verified journal reports ``fields`` of the event the call left."""
    journal = entry.body["journal"]
    effect = {**journal["effect"], "fields": {**journal["effect"]["fields"], **fields}}
    return with_body(entry, journal={**journal, "effect": effect})


def test_the_d881_customer_is_named_when_only_the_server_reported_the_attendees() -> None:
    call = reported(
        with_body(kickoff(), arguments={"summary": "Kickoff with Globex", "invite": "globex-team"}),
        attendees=[{"email": "buyer@globex.com"}, {"email": "lee@acme.com"}],
    )

    [effect] = side_effects_of(step_of(call), {call.id: call})

    assert effect.recipients == ["buyer@globex.com", "lee@acme.com"]


def test_the_arguments_and_the_report_are_both_named_once_each() -> None:
    call = reported(kickoff(), attendees=["buyer@globex.com", "ops@globex.com"])

    [effect] = side_effects_of(step_of(call), {call.id: call})

    assert effect.recipients == ["buyer@globex.com", "lee@acme.com", "dana@acme.com", "ops@globex.com"]


def test_what_an_unverified_journal_says_names_nobody() -> None:
    call = reported(with_body(kickoff(), arguments={}), attendees=["buyer@globex.com"])
    unverified = with_body(call, intake={"kind": "unknown", "status": "unresolved"})

    [effect] = side_effects_of(step_of(unverified), {call.id: unverified})

    assert effect.recipients == []


def test_a_call_missing_from_the_record_names_nobody_and_keeps_its_side_effect() -> None:
    [effect] = side_effects_of(step_of(kickoff()), {})

    assert (effect.text, effect.recipients) == (NOTICE, [])


def test_a_reported_member_the_sentence_does_not_name_names_nobody() -> None:
    assert recipients(NOTICE, {}, {"organizer": "dana@acme.com"}) == []
