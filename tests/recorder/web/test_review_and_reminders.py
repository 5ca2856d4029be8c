"""Review and reminders (protocol.md §12) through `hatp-recorder tick`, into a real SMTP mail sink."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.undo_org import DANA, LEAD, Org, mailing, make_org

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.runs.reminders import record_seen
from hatp_journal.recorder.web import WebApprover
from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.mailsink import MailSink

# The chain server's windows are one hour: remind 30 minutes before, escalate 10 minutes before.
REVIEW = {"remindBeforeSeconds": 1800, "escalateBeforeSeconds": 600}


@pytest.fixture
def mail(tmp_path: Path) -> Iterator[MailSink]:
    with MailSink(tmp_path / "mail") as sink:
        yield sink


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str], mail: MailSink) -> Org:
    return mailing(make_org(tmp_path / "org", capfd), mail.port, REVIEW)


def tick(org: Org, at: str) -> list[list[str]]:
    """``hatp-recorder tick --now AT``: one row (run/entry, kind, step, after) per line printed."""
    code, out, err = org.cli("tick", "--now", at)
    assert code == 0, err
    return [_tick_row(line) for line in out.splitlines()]


def _tick_row(line: str) -> list[str]:
    step = re.search(r"\b(e\d+): ", line)
    after = re.search(r"\bafter (\w+)", line)
    return [*line.split()[:2], step.group(1) if step else "", after.group(1) if after else ""]


def column_starts(line: str) -> list[int]:
    """Where each column after the first starts: after a run of two or more spaces."""
    return [found.end() for found in re.finditer(r" {2,}", line)]


def undo_by(org: Org, run: str) -> str:
    [call] = [e for e in org.entries(run) if e.kind == "call"]
    return str(call.body["journal"]["undo"]["undoBy"])


def minutes_before(moment: str, minutes: int) -> str:
    return wire_time(parse_wire_time(moment) - timedelta(minutes=minutes))


def kinds(org: Org, run: str) -> list[str]:
    return [
        e.kind for e in org.entries(run) if e.kind in ("review", "reminder", "escalation", "seen", "lapse")
    ]


def test_a_closed_run_gets_its_review_then_a_reminder_an_escalation_and_a_lapse_after_escalation(
    org: Org, mail: MailSink
) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    closes = undo_by(org, run)

    assert [row[1] for row in tick(org, minutes_before(closes, 59))] == ["review"]
    assert [row[1] for row in tick(org, minutes_before(closes, 25))] == ["reminder"]
    assert [row[1] for row in tick(org, minutes_before(closes, 5))] == ["escalation"]
    [lapse] = tick(org, minutes_before(closes, -1))

    assert lapse[1:4] == ["lapse", "e1", "escalation"]
    delivered = mail.wait_for(3)
    assert [m.envelope_to for m in delivered] == [
        ("dana@acme.example",),
        ("dana@acme.example",),
        ("lee@acme.example",),
    ]
    assert delivered[0].subject == f"Review of sales-bot's run {run}"
    assert delivered[1].subject.startswith(f"Undo window closes {closes}")
    assert delivered[2].subject.startswith("Nobody has looked")
    assert f"/runs/{run}" in delivered[0].message.get_content()
    [escalation] = [e for e in org.entries(run) if e.kind == "escalation"]
    assert escalation.body["role"] == LEAD


def test_ticking_twice_sends_nothing_twice(org: Org, mail: MailSink) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    at = minutes_before(undo_by(org, run), 5)
    code, out, err = org.cli("tick", "--now", at)
    assert code == 0, err
    review, reminder = out.splitlines()  # the review and the reminder, in aligned columns
    assert column_starts(review)[0] == column_starts(reminder)[0]
    assert "\t" not in out
    assert len(tick(org, wire_time(parse_wire_time(at) + timedelta(seconds=1)))) == 1  # then the escalation

    assert tick(org, at) == []
    assert tick(org, at) == []
    assert len(mail.wait_for(3)) == 3
    assert kinds(org, run) == ["review", "reminder", "escalation"]


def test_a_window_someone_looked_at_lapses_quietly_without_escalation(org: Org, mail: MailSink) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    closes = undo_by(org, run)
    tick(org, minutes_before(closes, 25))
    store = org.store()
    try:
        record_seen(store, run, DANA, parse_wire_time(minutes_before(closes, 20)))
    finally:
        store.dispose()

    assert tick(org, minutes_before(closes, 5)) == []
    [lapse] = tick(org, minutes_before(closes, -1))

    assert lapse[1:4] == ["lapse", "e1", "quiet"]
    assert kinds(org, run) == ["review", "reminder", "seen", "lapse"]
    assert [m.envelope_to for m in mail.wait_for(2)] == [("dana@acme.example",)] * 2


def test_tick_refuses_a_time_it_cannot_read(org: Org) -> None:
    code, _, err = org.cli("tick", "--now", "Friday evening")

    assert code == 2
    assert "--now" in err


def test_the_approver_mails_the_review_by_itself_while_it_serves(org: Org, mail: MailSink) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    with org.config.open("a") as config:
        config.write('\n[web]\nkeys = "."\ntick_seconds = 0.1\n')
    approver = WebApprover(load_config(org.config))
    try:
        with serving(approver.app, scheduler=True):
            [review] = mail.wait_for(1)
            with pytest.raises(TimeoutError):  # five more ticks go by: none sends anything twice
                mail.wait_for(2, timeout=0.5)
    finally:
        approver.close()

    assert review.subject == f"Review of sales-bot's run {run}"
    assert kinds(org, run) == ["review"]


def test_hatp_recorder_web_runs_the_scheduler_too(org: Org, mail: MailSink) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    with org.config.open("a") as config:
        config.write('\n[web]\nkeys = "."\ntick_seconds = 0.1\n')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hatp_journal.recorder.cli",
            "--config",
            str(org.config),
            "web",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        [review] = mail.wait_for(1, timeout=60)
    finally:
        web.terminate()
        web.wait(timeout=30)

    assert review.subject == f"Review of sales-bot's run {run}"


def test_a_tick_killed_after_the_mail_left_sends_it_again_on_the_next_tick_with_the_same_message_id(
    org: Org, mail: MailSink
) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    at = minutes_before(undo_by(org, run), 59)
    killed = subprocess.run(
        [
            sys.executable,
            "-m",
            "hatp_journal.recorder.cli.command_line",
            "--config",
            str(org.config),
            "tick",
            "--now",
            at,
        ],
        env={**os.environ, "HATP_JOURNAL_TESTING": "1", "HATP_JOURNAL_CRASH_AT": "reminders:mailed"},
        capture_output=True,
        check=False,
    )
    unrecorded = [e.kind for e in org.entries(run) if e.kind.startswith("mail-")]

    [row] = tick(org, at)
    delivered = mail.wait_for(2)

    assert killed.returncode == -signal.SIGKILL
    assert kinds(org, run) == ["review"]  # queued before it was sent
    assert unrecorded == []  # killed between the server's 250 and its mail-delivered entry
    assert row[1] == "mail-delivered"
    [review] = [e for e in org.entries(run) if e.kind == "review"]
    # The one window where a notice goes twice: the same Message-ID, so the receiver can tell.
    assert [str(m.message["Message-ID"]) for m in delivered] == [review.body["messageId"]] * 2
    assert tick(org, at) == []


def test_review_of_a_run_that_does_not_exist_is_refused(org: Org) -> None:
    code, out, err = org.cli("review", "run_nope", "--as", DANA)

    assert (code, out) == (2, "")
    assert err.startswith("hatp-recorder: UNKNOWN_RUN: ")


def test_review_by_someone_outside_the_directory_is_refused_and_not_recorded_as_seen(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])

    code, out, err = org.cli("review", run, "--as", "human://acme.com/nobody")

    assert (code, out) == (2, "")
    assert err.startswith("hatp-recorder: NOT_PERMITTED: ")
    assert "seen" not in [e.kind for e in org.entries(run)]
