"""The D-881 story end to end (protocol.md §0), judged by the mail sink, the servers' stores, the record."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from d881_readback import assert_one_cancel_per_attendee, deal_stage, play, reversal_of
from sqlmodel import Session

from hatp_journal._shared.clock import utc_now
from hatp_journal.scenarios.cli import main
from hatp_journal.scenarios.d881 import story as d881_story
from hatp_journal.servers.calendar.store import all_events
from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.toolkit import create_store_engine

pytestmark = pytest.mark.slow


def spec_plan(day: str) -> str:
    """The plan as protocol.md §0 shows it, with the kickoff on ``day`` (``Nov 4`` there; the story books it
    two weeks after the day it is played)."""
    return f"""\
Undo 2 actions by sales-bot for Dana:
  step 2  Cancel "Kickoff with Globex" on {day}   (attendees get a cancellation notice: {ATTENDEES})
  step 1  Deal D-881 stage: Won → Proposal
Cannot be undone:
  step 3  Email to buyer@globex.com   ({EMAIL_NOTE})
"""


ATTENDEES = "buyer@globex.com, lee@acme.com, dana@acme.com"
EMAIL_NOTE = "delivered to external recipients; suggested remedy: send a correction email"


def kickoff_day(today: date) -> str:
    at = d881_story.kickoff(today)
    return f"{at:%b} {at.day}"


def test_the_d881_story_prints_the_spec_plan_and_takes_back_the_deal_and_the_meeting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    today = utc_now().date()
    monkeypatch.chdir(tmp_path)  # `hatp-demo d881 --workdir out`: a folder relative to where it is run
    out = play(Path("out"), capsys)
    workdir = tmp_path / "out"

    assert spec_plan(kickoff_day(today)) in out or spec_plan(kickoff_day(utc_now().date())) in out, out
    assert d881_story.kickoff(today).date() > today  # the kickoff is booked after the day of the run
    assert re.findall(r"^== (\d+)\. ", out, flags=re.MULTILINE) == ["1", "2", "3", "4"]
    assert "Starting MCP server" not in out
    assert "`verify` checks" in out  # the signed head's line is explained
    assert deal_stage(workdir) == "Proposal"
    delivered = read_maildir(workdir / "mail")
    assert_one_cancel_per_attendee(delivered)
    [welcome] = [m for m in delivered if m.calendar_method is None]
    assert welcome.envelope_to == ("buyer@globex.com",)
    assert reversal_of(workdir) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "reversed"}
    assert "suggested remedy: send a correction email (not performed)" in out
    assert "verify says ok" in out
    calendar = create_store_engine(workdir / "calendar.db")
    try:
        with Session(calendar) as session:
            assert [event.status for event in all_events(session)] == ["CANCELLED"]
    finally:
        calendar.dispose()


def test_an_override_without_eve_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["d881", "--workdir", str(tmp_path), "--override"]) == 1
    assert "--override only makes sense with --eve" in capsys.readouterr().err
