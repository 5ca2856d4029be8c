"""What the D-881 scenario tests read back: the story's output, the deal, the Reversal Record, the mail."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from hatp_journal.recorder.record import RunStore
from hatp_journal.scenarios import d881
from hatp_journal.scenarios.cli import main
from hatp_journal.servers.calendar.itip import parse_event
from hatp_journal.servers.crm.store import read_deal
from hatp_journal.servers.mailsink import DeliveredMessage
from hatp_journal.toolkit import SigningKey, create_store_engine

ATTENDEES = ["buyer@globex.com", "dana@acme.com", "lee@acme.com"]


def play(workdir: Path, capsys: pytest.CaptureFixture[str], *variant: str) -> str:
    """``hatp-demo d881 --workdir DIR``, every part a process of its own as the demo runs it."""
    status = main(["d881", "--workdir", str(workdir), *variant])
    told = capsys.readouterr()
    assert status == 0, told.err
    return told.out


def play_in_process(workdir: Path, *, eve: bool = False, override: bool = False) -> str:
    """The story with its mail sink and the people's commands in this process and the servers
    mailing inline (none of these tests is about a kill); what it printed."""
    return play_told_in_process(workdir, eve=eve, override=override)[0]


def play_told_in_process(
    workdir: Path, *, eve: bool = False, override: bool = False, tracing: bool = False
) -> tuple[str, d881.Told]:
    """:func:`play_in_process`, and what the story told (its run, its plan)."""
    printed = io.StringIO()
    told = anyio.run(
        lambda: d881.run(workdir, printed, eve=eve, override=override, in_process=True, tracing=tracing)
    )
    return printed.getvalue(), told


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
