"""Commands that walk every run read each run on its own: one run whose record can't be read is
logged (`RUN_UNREADABLE`) and skipped, and the others are listed as if it were not there."""

from __future__ import annotations

import logging
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.runs.walk import RUN_UNREADABLE
from hatp_journal.recorder.undo.approval import pending_plans
from hatp_journal.toolkit.signing import SigningKey

DANA = "human://acme.com/dana"


def run_with_an_ask(store: RunStore) -> str:
    run = store.open_run(agent="bot", principal=DANA).id
    call = {"server": "crm", "tool": "put", "arguments": {"key": "a"}}
    Asks(store).open(run, call, now=utc_now(), approver="role://acme/lead", within=timedelta(days=365))
    return run


def test_pending_asks_and_plans_skip_a_damaged_run_and_log_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    try:
        broken, fine = run_with_an_ask(store), run_with_an_ask(store)
        with sqlite3.connect(tmp_path / "recorder.db") as database:  # a row damaged outside the Recorder
            database.execute("UPDATE rec_entry SET data = ? WHERE run = ? AND seq = 1", (b"[1, 2]", broken))
        caplog.set_level(logging.WARNING)

        asks = Asks(store).pending()
        plans = pending_plans(store)
    finally:
        store.dispose()

    assert [ask.ref for ask in asks] == [f"{fine}/e1"]
    assert plans == []
    assert [(r.code, r.run) for r in caplog.records] == [(RUN_UNREADABLE, broken)] * 2  # type: ignore[attr-defined]
