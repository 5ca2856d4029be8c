"""Undoing calendar steps: conflicts with a colleague's edit, updates restored, steps in reverse order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hatp_journal.servers.calendar import edit_event

pytestmark = pytest.mark.anyio


def methods_and_sequences(messages, itip):
    found = []
    for message in messages:
        method, event = itip(message.calendar_parts()[0])
        found.append((method, event["SEQUENCE"], str(event["SUMMARY"]), message.envelope_to))
    return found


async def test_undo_after_a_colleague_edited_the_event_is_a_conflict_and_sends_no_cancel(calendar):
    created = await calendar.create()
    uid = created.content["uid"]
    calendar.smtp.wait_for(2)
    edit_event(calendar.journal.engine, uid, by="eve@acme.com", now=calendar.clock(), summary="Globex sync")

    check = await calendar.call("hatp_journal_check", token=created.meta["compensationToken"])
    undone = await calendar.undo(created.meta)

    assert check.meta["status"] == "conflict"
    assert undone.failed
    assert undone.meta["code"] == "UNDO_CONFLICT"
    assert (undone.meta["versionFound"], undone.meta["changedBy"]) == ("v2", "eve@acme.com")
    assert {"field": "summary", "expected": "Kickoff with Globex", "now": "Globex sync"} in undone.meta[
        "changes"
    ]
    # Mail is sent inside the call, before it answers: nothing more can still be on its way.
    assert len(calendar.smtp.messages()) == 2
    event = await calendar.event(uid)
    assert (event["summary"], event["status"]) == ("Globex sync", "CONFIRMED")


async def test_undoing_an_update_restores_the_fields_and_sends_attendees_the_update(calendar, itip):
    uid = (await calendar.create()).content["uid"]
    updated = await calendar.call(
        "update_event", uid=uid, start="2026-11-05T15:00:00Z", end="2026-11-05T16:00:00Z"
    )
    calendar.smtp.wait_for(4)

    undone = await calendar.undo(updated.meta)
    restores = calendar.smtp.wait_for(6)[4:]

    effect = updated.meta["effect"]
    assert effect["summary"] == (
        'Event "Kickoff with Globex" start: Nov 4 15:00 UTC → Nov 5 15:00 UTC; '
        "end: Nov 4 16:00 UTC → Nov 5 16:00 UTC"
    )
    assert effect["changes"] == [
        {"field": "start", "before": "Nov 4 15:00 UTC", "after": "Nov 5 15:00 UTC"},
        {"field": "end", "before": "Nov 4 16:00 UTC", "after": "Nov 5 16:00 UTC"},
    ]
    assert (effect["before"], effect["version"]) == ("v1", "v2")
    assert updated.meta["undo"]["sideEffects"] == ["attendees get an updated invitation"]
    assert undone.meta["status"] == "done"
    assert undone.meta["sideEffects"] == ["updated invitation sent to buyer@globex.com, dana@acme.com"]
    event = await calendar.event(uid)
    assert (event["start"], event["end"], event["version"]) == (
        "2026-11-04T15:00:00Z",
        "2026-11-04T16:00:00Z",
        "v3",
    )
    for message in restores:
        method, vevent = itip(message.calendar_parts()[0])
        assert (method, vevent["SEQUENCE"]) == ("REQUEST", 2)
        assert vevent.start == datetime(2026, 11, 4, 15, 0, tzinfo=UTC)


async def test_a_create_then_an_update_undo_in_reverse_order_without_a_false_conflict(calendar, itip):
    created = await calendar.create()
    uid = created.content["uid"]
    updated = await calendar.call("update_event", uid=uid, summary="Kickoff with Globex (rescheduled)")

    later = await calendar.undo(updated.meta)
    earlier = await calendar.undo(created.meta)
    sent = methods_and_sequences(calendar.smtp.wait_for(8), itip)

    assert later.meta["status"] == "done"
    assert earlier.meta["status"] == "done", earlier.meta
    assert [(method, sequence) for method, sequence, _, _ in sent[::2]] == [
        ("REQUEST", 0),
        ("REQUEST", 1),
        ("REQUEST", 2),
        ("CANCEL", 3),
    ]
    assert sent[-1][2] == "Kickoff with Globex"
    assert (await calendar.event(uid))["status"] == "CANCELLED"


async def test_check_after_the_undo_answers_done_and_the_cancelled_event_cannot_be_updated(calendar):
    created = await calendar.create()
    uid = created.content["uid"]
    await calendar.undo(created.meta)

    check = await calendar.call("hatp_journal_check", token=created.meta["compensationToken"])
    update = await calendar.call("update_event", uid=uid, summary="Back on")

    assert check.meta["status"] == "done"
    assert update.failed
    assert update.error["code"] == "TOOL_FAILED"
    assert update.error["data"]["field"] == "uid"
    assert "compensationToken" not in update.meta
    assert len(calendar.smtp.messages()) == 4


async def test_a_cancelled_event_is_listed_with_its_status_and_version(calendar):
    created = await calendar.create()
    await calendar.create(summary="Globex QBR", start="2026-11-02T10:00:00Z", end="2026-11-02T11:00:00Z")
    await calendar.undo(created.meta)

    events = await calendar.events()

    assert [(e["summary"], e["status"], e["version"]) for e in events] == [
        ("Globex QBR", "CONFIRMED", "v1"),
        ("Kickoff with Globex", "CANCELLED", "v2"),
    ]
