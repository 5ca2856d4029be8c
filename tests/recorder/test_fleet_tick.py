"""Several Recorders ticking on one store mail each notice once (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.undo_org import Org, mailing, make_org

from hatp_journal._shared.clock import parse_wire_time, utc_now
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.fleet_lease import TICK_LEASE, fleet_lease
from hatp_journal.recorder.runs.reminders import tick
from hatp_journal.recorder.undo.actions import load_directory
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit.signing import SigningKey

RECORDERS = 4
REVIEW = {"remindBeforeSeconds": 1800, "escalateBeforeSeconds": 600}


@pytest.fixture
def mail(tmp_path: Path) -> Iterator[MailSink]:
    with MailSink(tmp_path / "mail") as sink:
        yield sink


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str], mail: MailSink, store_url: str) -> Org:
    return mailing(make_org(tmp_path / "org", capfd, store=store_url), mail.port, REVIEW)


def tick_as_a_recorder(org: Org, at: str, start: threading.Barrier, appended: list[int]) -> None:
    """One Recorder process's tick: its own store connection, config, policy and directory."""
    config = load_config(org.config)
    key = SigningKey.from_file(org.root / "recorder.key")
    store = RunStore(org.store_url or org.root / "recorder.db", key)
    try:
        policy, directory = load_policy(Path(config.recorder.policy)), load_directory(config)
        start.wait(60)
        entries, failed = tick(store, policy, directory, config.mail, parse_wire_time(at), "http://approver")
        assert failed == []
        appended.append(len(entries))
    finally:
        store.dispose()


def a_closed_run_whose_review_is_due(org: Org) -> tuple[str, str]:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    [call] = [e for e in org.entries(run) if e.kind == "call"]
    closes = parse_wire_time(str(call.body["journal"]["undo"]["undoBy"]))
    return run, (closes - timedelta(minutes=59)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_four_recorders_ticking_at_once_record_and_mail_the_review_once(org: Org, mail: MailSink) -> None:
    run, at = a_closed_run_whose_review_is_due(org)
    start, appended = threading.Barrier(RECORDERS), list[int]()
    threads = [
        threading.Thread(target=tick_as_a_recorder, args=(org, at, start, appended)) for _ in range(RECORDERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(appended)[-1] == 2  # the review and its mail-delivered
    assert sum(appended) == 2
    assert [e.kind for e in org.entries(run)].count("review") == 1
    assert len(mail.wait_for(1)) == 1
    # A later tick (the lease is free again) finds the review recorded and sends nothing.
    tick_as_a_recorder(org, at, threading.Barrier(1), appended)
    assert appended[-1] == 0
    assert len(mail.messages()) == 1


def test_a_tick_while_another_live_recorder_holds_the_lease_does_nothing(org: Org, mail: MailSink) -> None:
    run, at = a_closed_run_whose_review_is_due(org)
    store = org.store()
    try:
        with fleet_lease(store.engine, TICK_LEASE, timedelta(minutes=5)) as held:
            assert held
            skipped: list[int] = []
            tick_as_a_recorder(org, at, threading.Barrier(1), skipped)
            assert skipped == [0]
            assert "review" not in [e.kind for e in org.entries(run)]
    finally:
        store.dispose()

    done: list[int] = []
    tick_as_a_recorder(org, at, threading.Barrier(1), done)
    assert done == [2]  # the review and its mail-delivered
    assert len(mail.wait_for(1)) == 1


def test_a_lease_whose_time_ran_out_is_taken_over(store_url: str, tmp_path: Path) -> None:
    store = RunStore(store_url, SigningKey.generate())
    try:
        long_ago = utc_now() - timedelta(hours=1)
        with fleet_lease(store.engine, "job", timedelta(minutes=5), now=long_ago) as first:
            assert first
            with fleet_lease(store.engine, "job", timedelta(minutes=5)) as second:
                assert second  # the first holder's five minutes ended 55 minutes ago
            with fleet_lease(store.engine, "other", timedelta(minutes=5)) as unrelated:
                assert unrelated
    finally:
        store.dispose()
