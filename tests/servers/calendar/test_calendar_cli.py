"""``hatp-calendar edit`` and ``show``: a colleague's edit outside the run, and bad input exiting 2."""

from __future__ import annotations

import json

import pytest

from hatp_journal.servers.calendar.cli import main

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
