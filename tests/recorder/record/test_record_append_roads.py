"""The append's two roads (the SQLite driver, SQLAlchemy Core) write the same record, and a failed
append leaves nothing half done behind it."""

from __future__ import annotations

import io
import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from record_helpers import TickingClock, call_body, pins, server_pins
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import create_engine
from test_record_concurrency import AGENTS, APPENDS, assert_unforked, run_threads

from hatp_journal.recorder.record import BadEntry, RunStore, UnknownRun, verify_record
from hatp_journal.recorder.record import store as store_module
from hatp_journal.toolkit.signing import SigningKey


def on_core_road(store: RunStore) -> RunStore:
    """The same store, appending through SQLAlchemy Core as it does on databases other than SQLite."""
    store._sqlite_driver = False  # the road is private; this test checks both
    return store


def test_both_roads_write_byte_identical_records(
    tmp_path: Path, recorder_key: SigningKey, server_key: SigningKey
) -> None:
    roads = [
        RunStore(tmp_path / "driver.db", recorder_key, checkpoint_every=3, clock=TickingClock()),
        on_core_road(RunStore(tmp_path / "core.db", recorder_key, checkpoint_every=3, clock=TickingClock())),
    ]
    for store in roads:
        run = store.open_run(agent="sales-bot", principal="dana", run_id="run_same")
        for n in range(7):
            store.append(run.id, "call", call_body(server_key, n))
        store.append(run.id, "note", {"float": 1.5, "whole": 2.0, "text": "Proposal → Won"})

    driver, core = (store.export("run_same") for store in roads)
    assert driver.to_bytes() == core.to_bytes()
    assert [c.size for c in driver.checkpoints] == [3, 6, 8]
    report = verify_record(
        driver.to_bytes(), recorder_keys=pins(roads[0]), server_keys=server_pins(server_key)
    )
    assert report.ok, report.problems
    for store in roads:
        store.dispose()


def test_postgresql_keeps_the_very_bytes_the_sqlite_driver_keeps(
    tmp_path: Path, postgres_url: str, recorder_key: SigningKey, server_key: SigningKey
) -> None:
    stores = [
        RunStore(tmp_path / "driver.db", recorder_key, checkpoint_every=3, clock=TickingClock()),
        RunStore(postgres_url, recorder_key, checkpoint_every=3, clock=TickingClock()),
    ]
    for store in stores:
        run = store.open_run(agent="sales-bot", principal="dana", run_id="run_same")
        for n in range(7):
            store.append(run.id, "call", call_body(server_key, n))
        store.append(run.id, "note", {"float": 1.5, "whole": 2.0, "big": 2**53 - 1, "text": "Proposal → Won"})
        store.close_run(run.id)

    on_sqlite, on_postgresql = (store.export("run_same") for store in stores)
    assert on_postgresql.to_bytes() == on_sqlite.to_bytes()
    assert [c.size for c in on_postgresql.checkpoints] == [3, 6, 8]
    streamed = io.BytesIO()
    stores[1].export_to("run_same", streamed)
    assert streamed.getvalue() == on_postgresql.to_bytes()
    for store in stores:
        store.dispose()


def test_eight_threads_on_the_core_road_leave_one_contiguous_chain(
    tmp_path: Path, recorder_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = RunStore.__init__

    def core_init(self: RunStore, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        on_core_road(self)

    store = RunStore(tmp_path / "shared.db", recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")
    monkeypatch.setattr(RunStore, "__init__", core_init)

    run_threads(tmp_path / "shared.db", recorder_key, [run.id])

    assert_unforked(store, run.id, AGENTS * APPENDS)
    store.dispose()


def test_a_refused_body_rolls_back_and_the_next_append_continues_the_chain(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "note", {"n": 1})

    with pytest.raises(BadEntry):
        store.append(run.id, "note", {"bad": math.nan})
    after = store.append(run.id, "note", {"n": 2})

    assert [e.seq for e in store.entries(run.id)] == [1, 2]
    assert after.prev_hash == store.entry(run.id, "e1").hash


def test_a_locked_database_fails_the_append_cleanly_and_the_store_recovers(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'locked.db'}")

    @event.listens_for(engine, "connect")
    def impatient(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA busy_timeout=50")

    store = RunStore(engine, recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "note", {"n": 1})

    with closing(sqlite3.connect(tmp_path / "locked.db", isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the timeout
        with pytest.raises(OperationalError, match="locked"):
            store.append(run.id, "note", {"n": 2})
        other.execute("ROLLBACK")

    store.append(run.id, "note", {"n": 3})
    assert [e.body["n"] for e in store.entries(run.id)] == [1, 3]
    assert verify_record(store.export(run.id).to_bytes(), recorder_keys=pins(store)).ok
    engine.dispose()


def test_another_store_appends_to_a_run_it_did_not_open_and_refuses_an_unknown_one(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    opener = RunStore(tmp_path / "record.db", recorder_key)
    run = opener.open_run(agent="sales-bot", principal="dana")
    opener.append(run.id, "note", {"by": "opener"})
    other = RunStore(tmp_path / "record.db", recorder_key)

    with pytest.raises(UnknownRun):
        other.append("run_missing", "note", {})
    other.append(run.id, "note", {"by": "other"})
    opener.append(run.id, "note", {"by": "opener"})

    assert [e.body["by"] for e in opener.entries(run.id)] == ["opener", "other", "opener"]
    with pytest.raises(UnknownRun):
        other.append("run_missing", "note", {})  # still unknown: a refusal is not remembered
    for store in (opener, other):
        store.dispose()


def test_a_seq_taken_by_another_writer_is_retried_then_refused_never_written_twice(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    for n in range(3):
        store.append(run.id, "note", {"n": n})
    attempts: list[str] = []
    real_sealed = RunStore._sealed

    def counting(self: RunStore, *args: Any) -> tuple[bytes, str]:
        attempts.append("sealed")
        return real_sealed(self, *args)

    # A head read that is always stale, as if another writer had always just taken the next seq.
    monkeypatch.setattr(store_module, "_HEAD_SQL", store_module._HEAD_SQL.replace("DESC", "ASC"))
    monkeypatch.setattr(RunStore, "_sealed", counting)

    with pytest.raises(IntegrityError):
        store.append(run.id, "note", {"n": "stale"})

    assert len(attempts) == store_module._APPEND_ATTEMPTS
    assert [e.body["n"] for e in store.entries(run.id)] == [0, 1, 2]
