"""Bad input and failed mail: a clear error with a code, no token, nothing stored, nobody misinformed."""

from __future__ import annotations

import pytest
from fastmcp import Client

from hatp_journal.servers.calendar import build
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.testing import FakeClock

pytestmark = pytest.mark.anyio


async def test_an_unknown_event_uid_fails_with_tool_failed_naming_uid_and_gives_no_token(calendar):
    updated = await calendar.call("update_event", uid="evt-nope@acme.com", summary="Moved")
    read = await calendar.call("get_event", uid="evt-nope@acme.com")

    for answer in (updated, read):
        assert answer.failed
        assert answer.error["code"] == "TOOL_FAILED"
        assert (answer.error["data"]["field"], answer.error["data"]["cause"]) == ("uid", "UNKNOWN_EVENT")
        assert "compensationToken" not in answer.meta


@pytest.mark.parametrize(
    ("changes", "code", "field"),
    [
        ({"start": "2026-11-04T15:00:00"}, "INVALID_ARGUMENTS", "start"),
        ({"end": "tomorrow afternoon"}, "INVALID_ARGUMENTS", "end"),
        ({"end": "2026-11-04T14:00:00Z"}, "TOOL_FAILED", "end"),
        ({"attendees": ["buyer at globex"]}, "TOOL_FAILED", "attendees"),
        ({"attendees": []}, "TOOL_FAILED", "attendees"),
        ({"summary": "  "}, "TOOL_FAILED", "summary"),
    ],
    ids=[
        "naive-start",
        "unreadable-end",
        "end-before-start",
        "bad-attendee",
        "no-attendees",
        "blank-summary",
    ],
)
async def test_invalid_event_input_names_the_field_and_stores_and_sends_nothing(
    calendar, changes, code, field
):
    created = await calendar.create(**changes)

    assert created.failed
    assert created.error["code"] == code
    data = created.error["data"]
    assert field in data.get("fields", [data.get("field")])
    assert "compensationToken" not in created.meta
    assert await calendar.events() == []
    assert calendar.smtp.messages() == []


async def test_an_update_that_changes_nothing_is_refused_without_a_token(calendar):
    uid = (await calendar.create()).content["uid"]

    same = await calendar.call("update_event", uid=uid, summary="Kickoff with Globex")

    assert same.failed
    assert same.error["data"]["cause"] == "NO_CHANGE"
    assert "compensationToken" not in same.meta
    assert (await calendar.event(uid))["version"] == "v1"


async def test_with_smtp_unreachable_create_fails_clearly_and_nothing_is_stored(
    tmp_path, closed_port, kickoff
):
    mcp, _ = build(tmp_path / "calendar.db", SigningKey.generate(), "127.0.0.1", closed_port, FakeClock())
    async with Client(mcp) as client:
        created = await client.call_tool_mcp("create_event", kickoff)
        listed = await client.call_tool_mcp("list_events", {})

    meta = created.meta["hatp/journal"]
    assert created.is_error
    assert meta["error"]["code"] == "TOOL_FAILED"
    assert meta["error"]["data"]["cause"] == "MAIL_DELIVERY_FAILED"
    assert list(meta["error"]["data"]["undelivered"]) == ["buyer@globex.com"]
    assert meta["error"]["data"]["notSent"] == ["dana@acme.com"]
    assert "compensationToken" not in meta
    assert listed.structured_content == {"events": []}


@pytest.fixture
async def refusing_calendar(tmp_path, refusing_smtp):
    mcp, _ = build(tmp_path / "calendar.db", SigningKey.generate(), refusing_smtp.host, refusing_smtp.port)
    async with Client(mcp) as client:
        yield client


async def test_an_invitation_refused_by_one_attendee_reaches_nobody_and_is_not_stored(
    refusing_calendar, refusing_smtp, kickoff
):
    refusing_smtp.refuse.add("dana@acme.com")

    created = await refusing_calendar.call_tool_mcp("create_event", kickoff)
    listed = await refusing_calendar.call_tool_mcp("list_events", {})

    data = created.meta["hatp/journal"]["error"]["data"]
    assert created.is_error
    assert data["cause"] == "MAIL_DELIVERY_FAILED"
    assert list(data["undelivered"]) == ["dana@acme.com"]
    assert "compensationToken" not in created.meta["hatp/journal"]
    # The buyer's invitation was staged (content sent) but its final "." never: nothing to take back.
    assert refusing_smtp.accepted == []
    assert listed.structured_content == {"events": []}


async def test_a_cancellation_refused_by_one_attendee_is_done_and_the_receipt_says_who_was_not_told(
    refusing_calendar, refusing_smtp, kickoff
):
    created = (await refusing_calendar.call_tool_mcp("create_event", kickoff)).meta["hatp/journal"]
    refusing_smtp.refuse.add("dana@acme.com")

    undo = {"token": created["compensationToken"], "ifVersion": created["effect"]["version"]}
    answer = (await refusing_calendar.call_tool_mcp("hatp_journal_compensate", undo)).meta["hatp/journal"]

    assert answer["status"] == "done"
    assert answer["sideEffects"][0] == "cancellation notice sent to buyer@globex.com"
    assert answer["sideEffects"][1].startswith("cancellation notice NOT delivered to dana@acme.com")
    assert refusing_smtp.methods_to("buyer@globex.com") == ["REQUEST", "CANCEL"]
    assert refusing_smtp.methods_to("dana@acme.com") == ["REQUEST"]


async def test_a_cancellation_nobody_could_receive_fails_changes_nothing_and_a_new_attempt_works(
    refusing_calendar, refusing_smtp, kickoff
):
    created = await refusing_calendar.call_tool_mcp("create_event", kickoff)
    journal, uid = created.meta["hatp/journal"], created.structured_content["uid"]
    refusing_smtp.refuse.update(kickoff["attendees"])
    undo = {"token": journal["compensationToken"], "ifVersion": journal["effect"]["version"]}

    failed = await refusing_calendar.call_tool_mcp("hatp_journal_compensate", undo)
    still = await refusing_calendar.call_tool_mcp("get_event", {"uid": uid})
    refusing_smtp.refuse.clear()
    retried = await refusing_calendar.call_tool_mcp(
        "hatp_journal_compensate", {**undo, "requestId": "mail-is-back"}
    )

    assert failed.is_error
    assert failed.meta["hatp/journal"]["code"] == "UNDO_FAILED"
    assert (still.structured_content["status"], still.structured_content["version"]) == ("CONFIRMED", "v1")
    assert retried.meta["hatp/journal"]["status"] == "done"
    assert refusing_smtp.methods_to("dana@acme.com") == ["REQUEST", "CANCEL"]


async def test_an_update_refused_by_one_attendee_reaches_nobody_and_is_not_stored(
    refusing_calendar, refusing_smtp, kickoff
):
    uid = (await refusing_calendar.call_tool_mcp("create_event", kickoff)).structured_content["uid"]
    refusing_smtp.refuse.add("dana@acme.com")

    updated = await refusing_calendar.call_tool_mcp("update_event", {"uid": uid, "summary": "Moved"})
    event = await refusing_calendar.call_tool_mcp("get_event", {"uid": uid})

    assert updated.is_error
    assert list(updated.meta["hatp/journal"]["error"]["data"]["undelivered"]) == ["dana@acme.com"]
    assert (event.structured_content["summary"], event.structured_content["version"]) == (
        "Kickoff with Globex",
        "v1",
    )
    assert refusing_smtp.methods_to("buyer@globex.com") == ["REQUEST"]  # the invitation only
