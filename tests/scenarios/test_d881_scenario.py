"""The D-881 story end to end (protocol.md §0), judged by the mail sink, the servers' stores, the record."""

from __future__ import annotations

from pathlib import Path

import pytest
from d881_readback import assert_one_cancel_per_attendee, deal_stage, play, reversal_of
from sqlmodel import Session

from hatp_journal.scenarios.cli import main
from hatp_journal.servers.calendar.store import all_events
from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.toolkit import create_store_engine

pytestmark = pytest.mark.slow

SPEC_PLAN = """\
Undo 2 actions by sales-bot for Dana:
  1. Cancel "Kickoff with Globex" on Nov 4   (attendees get a cancellation notice)
  2. Deal D-881 stage: Won → Proposal
Cannot be undone:
  - Email to buyer@globex.com   (delivered to external recipients)
"""


def test_the_d881_story_prints_the_spec_plan_and_takes_back_the_deal_and_the_meeting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(tmp_path, capsys)

    assert SPEC_PLAN in out, out
    assert deal_stage(tmp_path) == "Proposal"
    delivered = read_maildir(tmp_path / "mail")
    assert_one_cancel_per_attendee(delivered)
    [welcome] = [m for m in delivered if m.calendar_method is None]
    assert welcome.envelope_to == ("buyer@globex.com",)
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "reversed"}
    assert "suggested remedy: send a correction email (not performed)" in out
    assert "verify says ok" in out
    calendar = create_store_engine(tmp_path / "calendar.db")
    try:
        with Session(calendar) as session:
            assert [event.status for event in all_events(session)] == ["CANCELLED"]
    finally:
        calendar.dispose()


def test_an_override_without_eve_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["d881", "--workdir", str(tmp_path), "--override"]) == 1
    assert "--override only makes sense with --eve" in capsys.readouterr().err
