"""``hatp-calendar edit`` and ``show``: a colleague's edit outside the run, and bad input exiting 2."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import update
from sqlmodel import Session

from hatp_journal.servers.calendar.cli import main
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.outbox import OutboxNotice

pytestmark = pytest.mark.anyio


async def test_a_colleague_edit_from_the_command_line_makes_the_agents_undo_a_conflict(
    calendar, tmp_path, capsys
):
    created = await calendar.create()
    uid = created.content["uid"]
    db = str(tmp_path / "calendar.db")

    status = main(
        [
            "edit",
            "--db",
            db,
            uid,
            "--start",
            "2026-11-05T15:00:00Z",
            "--end",
            "2026-11-05T16:00:00+00:00",
            "--by",
            "eve@acme.com",
        ]
    )
    edited = json.loads(capsys.readouterr().out)
    undone = await calendar.undo(created.meta)

    assert status == 0
    assert (edited["version"], edited["changed_by"], edited["start"]) == (
        "v2",
        "eve@acme.com",
        "2026-11-05T15:00:00Z",
    )
    assert undone.meta["code"] == "UNDO_CONFLICT"
    assert undone.meta["changedBy"] == "eve@acme.com"
    assert len(calendar.smtp.messages()) == 2


async def test_show_lists_events_and_prints_one_with_its_stored_icalendar_text(calendar, tmp_path, capsys):
    uid = (await calendar.create()).content["uid"]
    db = str(tmp_path / "calendar.db")

    listed = main(["show", "--db", db])
    [line] = capsys.readouterr().out.splitlines()
    shown = main(["show", "--db", db, uid])
    text = capsys.readouterr().out

    assert listed == shown == 0
    assert line.split("\t") == [uid, "v1", "CONFIRMED", "2026-11-04T15:00:00Z", "Kickoff with Globex"]
    assert f"UID:{uid}" in text.splitlines()
    assert "METHOD:REQUEST" in text.splitlines()


async def test_show_lists_a_summary_with_line_breaks_c1_controls_and_bidi_on_its_one_line_escaped(
    calendar, tmp_path, capsys
):
    summary = "Lunch\nabc\tv9\tCANCELLED\u009b2J\u202egpj.exe"
    uid = (await calendar.create(summary=summary)).content["uid"]

    assert main(["show", "--db", str(tmp_path / "calendar.db")]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.split("\t") == [
        uid,
        "v1",
        "CONFIRMED",
        "2026-11-04T15:00:00Z",
        "Lunch\\nabc\\tv9\\tCANCELLED\\x9b2J\\u202egpj.exe",
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        ["edit", "--db", "{db}", "{uid}", "--start", "2026-11-05T15:00:00", "--by", "eve@acme.com"],
        ["edit", "--db", "{db}", "{uid}", "--end", "2026-11-04T14:00:00Z", "--by", "eve@acme.com"],
        ["edit", "--db", "{db}", "{uid}", "--by", "eve@acme.com"],
        ["edit", "--db", "{db}", "evt-nope@acme.com", "--summary", "x", "--by", "eve@acme.com"],
        ["show", "--db", "{db}", "evt-nope@acme.com"],
        ["show", "--db", "{missing}"],
        ["serve", "--db", "{db}", "--organizer", "Sales Bot"],
        ["serve", "--db", "{db}", "--smtp-port", "70000"],
    ],
    ids=[
        "naive-start",
        "end-before-start",
        "no-change",
        "unknown-uid",
        "show-unknown",
        "missing-db",
        "bad-organizer",
        "bad-port",
    ],
)
async def test_bad_input_prints_a_message_on_stderr_exits_2_and_changes_nothing(
    calendar, tmp_path, capsys, arguments
):
    uid = (await calendar.create()).content["uid"]
    values = {"db": str(tmp_path / "calendar.db"), "uid": uid, "missing": str(tmp_path / "nope.db")}

    status = main([argument.format(**values) for argument in arguments])

    assert status == 2
    assert capsys.readouterr().err.strip()
    assert (await calendar.event(uid))["version"] == "v1"
    assert not (tmp_path / "nope.db").exists()


async def test_outbox_lists_each_notice_and_send_delivers_those_a_crash_left_prepared(
    calendar, tmp_path, capsys
):
    await calendar.create()
    invitations = calendar.smtp.wait_for(2)
    db = str(tmp_path / "calendar.db")
    with Session(calendar.journal.engine) as session:  # as if killed after the commit, before the "."
        session.execute(update(OutboxNotice).values(state="prepared"))
        session.commit()

    listed = main(["outbox", "--db", db])
    before = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # Another SMTP server, which never got them: the first one holds them and would recognise a
    # restart of each (CHECKPOINT) rather than store it again.
    with MailSink(tmp_path / "elsewhere") as elsewhere:
        sent = main(["outbox", "--db", db, "--send", "--smtp-port", str(elsewhere.port)])
        delivered = elsewhere.messages()  # 250 means stored: nothing to wait for
    after = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    assert (listed, sent) == (0, 0)
    assert [notice["state"] for notice in before] == ["prepared", "prepared"]
    assert [notice["state"] for notice in after] == ["sent", "sent"]
    assert {notice["kind"] for notice in after} == {"invitation"}
    ids = sorted(str(m.message["Message-ID"]) for m in invitations)
    assert sorted(notice["messageId"] for notice in after) == ids
    assert sorted(str(m.message["Message-ID"]) for m in delivered) == ids
