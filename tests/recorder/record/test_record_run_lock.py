"""On PostgreSQL a writer of a run's head waits for the transaction that holds the run's row, as on
SQLite it waits for ``BEGIN IMMEDIATE``: concurrent appenders take turns instead of racing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Connection, text
from support.waiting import wait_until

from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.run_lock import lock_run_head
from hatp_journal.toolkit.signing import SigningKey

WAIT = 60  # seconds: every wait is bounded


WAITING = (
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
)


def someone_waits_for_a_lock(observer: Connection) -> bool:
    waiting = int(observer.execute(text(WAITING)).scalar_one()) > 0
    observer.rollback()  # the activity view is a snapshot per transaction: look afresh next time
    return waiting


def test_an_append_waits_for_the_transaction_holding_the_runs_row_then_follows_its_head(
    postgres_url: str, recorder_key: SigningKey
) -> None:
    store = RunStore(postgres_url, recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "note", {"n": 1})

    with store.engine.connect() as holder, store.engine.connect() as observer, ThreadPoolExecutor(1) as pool:
        held = holder.begin()
        lock_run_head(holder, run.id)
        later = pool.submit(store.append, run.id, "note", {"n": 2})
        # progress: the append's transaction shows up waiting on the lock
        seen = wait_until(lambda: someone_waits_for_a_lock(observer), "the append waiting on the lock")
        still_waiting = not later.done()
        held.commit()
        entry = later.result(WAIT)

    assert seen
    assert still_waiting
    assert entry.id == "e2"
    assert entry.prev_hash == store.entry(run.id, "e1").hash
    store.dispose()
