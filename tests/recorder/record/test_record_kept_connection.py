"""An append returns the entry it wrote without reading it back, through one connection it keeps."""

from __future__ import annotations

import enum
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from record_helpers import TickingClock, call_body, pins
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool
from sqlmodel import create_engine
from test_record_concurrency import WAIT, assert_unforked

from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey
from hatp_journal.toolkit.store import configure_sqlite

THREADS = 4
APPENDS = 5


class Stage(enum.StrEnum):
    WON = "Won"


def typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out: 2 and 2.0, a list and a tuple, differ here."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(item) for item in value])
    return (type(value).__name__, value)


def append_from_threads(store: RunStore, run_id: str) -> None:
    """``THREADS`` threads append ``APPENDS`` entries each to one run through one shared store."""
    start = threading.Barrier(THREADS)

    def agent(n: int) -> None:
        start.wait(WAIT)
        for i in range(APPENDS):
            store.append(run_id, "note", {"agent": n, "i": i})

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for future in [pool.submit(agent, n) for n in range(THREADS)]:
            future.result(timeout=WAIT)  # re-raises a thread's error here


def test_an_appended_entry_equals_the_entry_read_back_from_its_bytes_type_for_type(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    bodies: list[dict[str, Any]] = [
        call_body(server_key, 1),  # plain JSON: kept as given
        {"whole": 2.0, "half": 0.5},  # floats: read back as stored, 2.0 as the integer 2
        {"pair": (1, "a"), "stage": Stage.WON},  # a tuple and an enum: read back as a list and a str
        {"é": "a key beyond ASCII", "z": 1},
        {"big": 2.0**60},  # a double beyond 2^53: read back as the same double
    ]
    appended = [store.append(run.id, "note", body) for body in bodies]

    read_back = store.entries(run.id)
    assert appended == read_back
    assert [typed(entry.body) for entry in appended] == [typed(entry.body) for entry in read_back]
    assert verify_record(store.export(run.id).to_bytes(), recorder_keys=pins(store)).ok


def test_a_store_keeps_one_connection_for_its_appends_and_dispose_gives_it_back(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'record.db'}")
    configure_sqlite(engine)
    store = RunStore(engine, recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")

    append_from_threads(store, run.id)

    assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    assert_unforked(store, run.id, THREADS * APPENDS)
    store.dispose()
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    engine.dispose()


def test_a_store_on_a_pool_that_keeps_nothing_lends_a_connection_per_append(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'record.db'}", poolclass=NullPool)
    configure_sqlite(engine)
    store = RunStore(engine, recorder_key, checkpoint_every=4, clock=TickingClock())
    run = store.open_run(agent="sales-bot", principal="dana")

    append_from_threads(store, run.id)

    assert_unforked(store, run.id, THREADS * APPENDS)
    store.dispose()
    engine.dispose()


def test_a_broken_kept_connection_fails_one_append_and_the_next_starts_afresh(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "note", {"n": 1})
    with store._appender.driver() as driver:
        kept = driver
    kept.close()  # the kept connection, broken behind the store's back

    with pytest.raises(DBAPIError):
        store.append(run.id, "note", {"n": 2})
    store.append(run.id, "note", {"n": 3})

    assert [e.body["n"] for e in store.entries(run.id)] == [1, 3]
    assert_unforked(store, run.id, 2)
