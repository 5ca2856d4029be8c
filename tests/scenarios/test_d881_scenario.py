"""The D-881 story end to end (SPEC §0), judged from the mail sink, the servers' stores and the record."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session

from hatp_journal.recorder.record import RunStore
from hatp_journal.scenarios.cli import main
from hatp_journal.servers.calendar.itip import parse_event
from hatp_journal.servers.calendar.store import all_events
from hatp_journal.servers.crm.store import read_deal
from hatp_journal.servers.mailsink import DeliveredMessage, read_maildir
from hatp_journal.toolkit import SigningKey, create_store_engine

SPEC_PLAN = """\
Undo 2 actions by sales-bot for Dana:
  1. Cancel "Kickoff with Globex" on Nov 4   (attendees get a cancellation notice)
  2. Deal D-881 stage: Won → Proposal
Cannot be undone:
  - Email to buyer@globex.com   (delivered to external recipients)
"""
ATTENDEES = ["buyer@globex.com", "dana@acme.com", "lee@acme.com"]


def play(workdir: Path, capsys: pytest.CaptureFixture[str], *variant: str) -> str:
    status = main(["d881", "--workdir", str(workdir), *variant])
    told = capsys.readouterr()
    assert status == 0, told.err
    return told.out


def deal_stage(workdir: Path) -> str:
    crm = create_store_engine(workdir / "crm.db")
    try:
        return read_deal(crm, "D-881").stage
    finally:
        crm.dispose()


def reversal_of(workdir: Path) -> dict[str, str]:
    """Each step's status in the Reversal Record, by step number."""
    store = RunStore(workdir / "recorder.db", SigningKey.from_file(workdir / "recorder.key"))
    try:
        [run] = store.runs()
        [reversal] = [e for e in store.entries(run.id) if e.kind == "reversal"]
        return {f"step {s['step']}": s["status"] for s in reversal.body["steps"]}
    finally:
        store.dispose()


def assert_one_cancel_per_attendee(delivered: list[DeliveredMessage]) -> None:
    requests = [m for m in delivered if m.calendar_method == "REQUEST"]
    cancels = [m for m in delivered if m.calendar_method == "CANCEL"]
    assert sorted(to for m in cancels for to in m.envelope_to) == ATTENDEES
    assert sorted(to for m in requests for to in m.envelope_to) == ATTENDEES
    invited = [parse_event(m.calendar_parts()[0]) for m in requests]
    cancelled = [parse_event(m.calendar_parts()[0]) for m in cancels]
    assert len({event.uid for event in invited + cancelled}) == 1
    assert min(c.sequence for c in cancelled) > max(r.sequence for r in invited)


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


def test_with_eve_the_deal_step_is_a_conflict_naming_her_and_the_meeting_is_still_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(tmp_path, capsys, "--eve")

    assert "Changed since (kept unless overridden):" in out, out
    assert "stage is now Negotiation (v14), changed by eve@acme.com" in out, out
    assert deal_stage(tmp_path) == "Negotiation"
    assert_one_cancel_per_attendee(read_maildir(tmp_path / "mail"))
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "conflicted"}
    assert "verify says ok" in out


def test_with_eve_and_an_override_the_approver_overwrites_her_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(tmp_path, capsys, "--eve", "--override")

    assert deal_stage(tmp_path) == "Proposal"
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "reversed"}
    assert "overwrote a newer change, by override of human://acme.com/lee" in out, out
    assert "verify says ok" in out


def test_an_override_without_eve_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["d881", "--workdir", str(tmp_path), "--override"]) == 1
    assert "--override only makes sense with --eve" in capsys.readouterr().err
