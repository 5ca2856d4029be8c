"""Reviews, reminders and escalations are queued by their entries and delivered by `tick` with retries:
the record calls a notice sent only once the SMTP server accepted it, and one bad run or one bad mail
never stops the others."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from support.flaky_smtp import FlakySmtp, flaky_smtp
from support.undo_org import Org, mailing, make_org
from support.waiting import wait_until

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.runs.notice_mail import MAIL_ATTEMPTS
from hatp_journal.recorder.web import WebApprover
from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.mailsink import MailSink

REVIEW = {"remindBeforeSeconds": 1800, "escalateBeforeSeconds": 600}
MAIL_KINDS = ("review", "reminder", "escalation", "lapse", "mail-delivered", "mail-deferred", "mail-failed")


def undo_by(org: Org, run: str) -> str:
    [call] = [e for e in org.entries(run) if e.kind == "call"]
    return str(call.body["journal"]["undo"]["undoBy"])


def at(moment: str, *, minutes: float) -> str:
    """``moment`` moved by ``minutes`` (negative: before it)."""
    return wire_time(parse_wire_time(moment) + timedelta(minutes=minutes))


def mail_of(org: Org, run: str, kind: str, notice: str) -> list[Entry]:
    """The run's ``kind`` entries (``mail-delivered``, …) about the mail of ``notice``."""
    return [e for e in org.entries(run) if e.kind == kind and e.body["notice"] == notice]


def trail(org: Org, run: str) -> list[tuple[str, object]]:
    """The run's notices and what became of their mail: (kind, attempt number or step)."""
    return [
        (e.kind, e.body.get("attempts", e.body.get("attempt", e.body.get("step"))))
        for e in org.entries(run)
        if e.kind in MAIL_KINDS
    ]


def reviewed(org: Org, smtp: FlakySmtp, closes: str) -> None:
    """Tick once for the review, which the server takes; then it turns mail away as set."""
    refusals, smtp.refusals = smtp.refusals, 0
    assert org.cli("tick", "--now", at(closes, minutes=-59))[0] == 0
    smtp.refusals, smtp.refused = refusals, 0


def test_a_reminder_turned_away_three_times_with_451_arrives_once_and_the_record_shows_each_try(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with flaky_smtp(refusals=3) as smtp:
        org = mailing(make_org(tmp_path / "org", capfd), smtp.port, REVIEW)
        run = org.agent([("chain_put", {"key": "a", "value": "1"})])
        closes = undo_by(org, run)
        reviewed(org, smtp, closes)

        first = org.cli("tick", "--now", at(closes, minutes=-25))
        too_soon = org.cli("tick", "--now", at(closes, minutes=-24.5))  # before the first retry is due
        for minutes in (-24, -22, -17):
            assert org.cli("tick", "--now", at(closes, minutes=minutes))[0] == 0
        lapse = org.cli("tick", "--now", at(closes, minutes=1))

    code, out, err = first
    assert code == 0  # deferred, not lost: the next tick tries again
    assert "mail deferred (MAIL_DELIVERY_FAILED), next try at" in out
    assert err.startswith(f"hatp-recorder: MAIL_DEFERRED: {run}/")
    assert "attempt 1 of 5" in err
    assert too_soon[1:] == ("", "")
    assert smtp.refused == 3
    assert [m["Subject"] for m in smtp.accepted[1:]] == [f"Undo window closes {closes}: Create key a"]
    assert trail(org, run) == [
        ("review", None),
        ("mail-delivered", 1),
        ("reminder", "e1"),
        ("mail-deferred", 1),
        ("mail-deferred", 2),
        ("mail-deferred", 3),
        ("mail-delivered", 4),
        ("lapse", "e1"),
    ]
    [reminder] = [e for e in org.entries(run) if e.kind == "reminder"]
    [delivered] = mail_of(org, run, "mail-delivered", reminder.id)
    assert delivered.body["to"] == ["dana@acme.example"]
    assert delivered.body["messageId"] == str(smtp.accepted[1]["Message-ID"]) == reminder.body["messageId"]
    [lapsed] = [e for e in org.entries(run) if e.kind == "lapse"]
    assert lapsed.body["reminded"] is True
    reached = {"kind": "reminder", "notice": reminder.id, "to": ["dana@acme.example"]}
    assert lapsed.body["reached"] == [reached]
    assert "after quiet" in lapse[1]


def test_a_reminder_a_server_never_takes_is_recorded_as_mail_failed_and_never_as_reminded(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with flaky_smtp(refusals=None) as smtp:
        org = mailing(make_org(tmp_path / "org", capfd), smtp.port, REVIEW)
        run = org.agent([("chain_put", {"key": "a", "value": "1"})])
        closes = undo_by(org, run)
        reviewed(org, smtp, closes)

        codes = [org.cli("tick", "--now", at(closes, minutes=m))[0] for m in (-25, -24, -22, -17, -12)]
        code, out, err = org.cli("tick", "--now", at(closes, minutes=-2))
        after = org.cli("tick", "--now", at(closes, minutes=1))

    assert codes == [0] * 5
    assert code == 1
    assert f"hatp-recorder: MAIL_FAILED: {run}/" in err
    assert "mail failed (MAIL_DELIVERY_FAILED)" in out
    assert smtp.accepted[1:] == []
    [reminder] = [e for e in org.entries(run) if e.kind == "reminder"]
    [failed] = mail_of(org, run, "mail-failed", reminder.id)
    assert failed.body["attempts"] == MAIL_ATTEMPTS
    assert "451" in failed.body["error"]
    assert mail_of(org, run, "mail-delivered", reminder.id) == []
    [lapsed] = [e for e in org.entries(run) if e.kind == "lapse"]
    assert (lapsed.body["reminded"], lapsed.body["after"], lapsed.body["reached"]) == (False, "quiet", [])
    assert not any(e.body.get("reminded") is True for e in org.entries(run))
    assert after[0] == 0


def test_a_review_queued_while_the_mail_server_is_down_goes_out_once_it_is_back(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sink = MailSink(tmp_path / "mail").start()
    port = sink.port
    sink.stop()
    org = mailing(make_org(tmp_path / "org", capfd), port, REVIEW)
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    start = at(undo_by(org, run), minutes=-59)

    code, out, err = org.cli("tick", "--now", start)
    with MailSink(tmp_path / "mail", port=port) as back:
        again = org.cli("tick", "--now", at(start, minutes=1))
        [review] = back.wait_for(1)

    [queued] = [e for e in org.entries(run) if e.kind == "review"]
    assert code == 0
    assert out.split()[:2] == [f"{run}/{queued.id}", "review"]
    assert err.startswith(f"hatp-recorder: MAIL_DEFERRED: {run}/{queued.id} review: ")
    assert [e.kind for e in org.entries(run)][-3:] == ["review", "mail-deferred", "mail-delivered"]
    assert again[0] == 0
    assert again[1].split()[1:5] == ["mail-delivered", "mail", "of", queued.id]
    assert str(review.message["Message-ID"]) == queued.body["messageId"]


def test_a_run_whose_reminder_cannot_be_mailed_never_changes_what_tick_sends_for_the_run_beside_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with MailSink(tmp_path / "mail") as mail:
        org = mailing(make_org(tmp_path / "org", capfd), mail.port, REVIEW)
        genuine = org.agent([("chain_put", {"key": "a", "value": "1"})])
        hostile = org.agent([("chain_put", {"key": "b\r\nBcc: eve@evil.example", "value": "1"})])
        closes = undo_by(org, genuine)
        ticks = [org.cli("tick", "--now", at(closes, minutes=m)) for m in (-25, -24, -5, 1)]
        delivered = mail.messages()

    assert all("Traceback" not in err for _, _, err in ticks)
    to_genuine = [m for m in delivered if genuine in m.message.get_content()]
    assert [(m.subject.partition(": ")[0], m.envelope_to) for m in to_genuine] == [
        (f"Review of sales-bot's run {genuine}", ("dana@acme.example",)),
        (f"Undo window closes {closes}", ("dana@acme.example",)),
        ("Nobody has looked", ("lee@acme.example",)),
    ]
    assert [k for k, _ in trail(org, genuine)] == [
        "review",
        "reminder",
        "mail-delivered",
        "mail-delivered",
        "escalation",
        "mail-delivered",
        "lapse",
    ]
    assert all(m.envelope_to != ("eve@evil.example",) for m in delivered)
    assert not any("eve@evil.example" in m.envelope_to for m in delivered)
    # The hostile run's own notices are all recorded, each mail delivered or failed with a code.
    entries = org.entries(hostile)
    notices = [e for e in entries if e.kind in ("review", "reminder", "escalation")]
    outcomes = {e.body["notice"]: e for e in entries if e.kind in ("mail-delivered", "mail-failed")}
    assert len(notices) == 3
    assert sorted(outcomes) == sorted(e.id for e in notices)
    assert all(e.kind == "mail-delivered" or e.body["code"] for e in outcomes.values())


def test_the_approvers_scheduler_outlives_a_tick_that_fails_as_a_whole(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with MailSink(tmp_path / "mail") as mail:
        org = mailing(make_org(tmp_path / "org", capfd), mail.port, REVIEW)
        run = org.agent([("chain_put", {"key": "a", "value": "1"})])
        policy = org.root / "policy.json"
        good = policy.read_text()
        policy.write_text("{not json")
        with org.config.open("a") as config:
            config.write('\n[web]\nkeys = "."\ntick_seconds = 0.05\n')
        approver = WebApprover(load_config(org.config))
        try:
            with serving(approver.app, scheduler=True):
                told: list[str] = []

                def tick_failed() -> bool:  # the scheduler's tick failed at least once
                    told.append(capfd.readouterr().err)
                    return "TICK_FAILED" in "".join(told)

                wait_until(tick_failed, "the scheduler to report TICK_FAILED", every=0.02)
                policy.write_text(good)
                [review] = mail.wait_for(1, timeout=30)
        finally:
            approver.close()

    assert review.subject == f"Review of sales-bot's run {run}"
    assert json.loads(good)["review"] == REVIEW
