"""Eight agents appending at once never fork a chain: threads and processes, each with its own store,
on a SQLite file and on PostgreSQL (``store_url``)."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from record_helpers import pins

from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey

AGENTS = 8
APPENDS = 12
WAIT = 60  # seconds: every wait is bounded


def append_as_agent(
    path: Path | str, key: SigningKey, run_ids: list[str], agent: int, start: threading.Barrier
) -> None:
    store = RunStore(path, key, checkpoint_every=7)
    try:
        start.wait(WAIT)
        for n in range(APPENDS):
            store.append(run_ids[agent % len(run_ids)], "call", {"agent": agent, "n": n})
    finally:
        store.dispose()


def run_threads(path: Path | str, key: SigningKey, run_ids: list[str]) -> None:
    start = threading.Barrier(AGENTS)
    with ThreadPoolExecutor(max_workers=AGENTS) as pool:
        futures = [pool.submit(append_as_agent, path, key, run_ids, n, start) for n in range(AGENTS)]
        for future in futures:
            future.result(timeout=WAIT)  # re-raises an agent's error here


def assert_unforked(store: RunStore, run_id: str, appends: int) -> None:
    entries = store.entries(run_id)
    assert [entry.seq for entry in entries] == list(range(1, appends + 1))
    assert [entry.prev_hash for entry in entries[1:]] == [entry.hash for entry in entries[:-1]]
    sizes = [checkpoint.size for checkpoint in store.checkpoints(run_id)]
    assert sizes == sorted(sizes)
    assert verify_record(store.export(run_id).to_bytes(), recorder_keys=pins(store)).ok


def test_eight_threads_appending_to_one_run_leave_one_contiguous_chain(
    store_url: str, recorder_key: SigningKey
) -> None:
    store = RunStore(store_url, recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")

    run_threads(store_url, recorder_key, [run.id])

    assert_unforked(store, run.id, AGENTS * APPENDS)
    per_agent = [[e.body["n"] for e in store.entries(run.id) if e.body["agent"] == a] for a in range(AGENTS)]
    assert per_agent == [list(range(APPENDS))] * AGENTS
    store.dispose()


def test_eight_threads_appending_to_their_own_runs_keep_each_chain_whole(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    store = RunStore(tmp_path / "shared.db", recorder_key)
    runs = [store.open_run(agent=f"agent-{n}", principal="dana").id for n in range(AGENTS)]

    run_threads(tmp_path / "shared.db", recorder_key, runs)

    for run_id in runs:
        assert_unforked(store, run_id, APPENDS)
    store.dispose()


def test_eight_processes_appending_to_one_run_leave_one_contiguous_chain(
    store_url: str, recorder_key: SigningKey
) -> None:
    store = RunStore(store_url, recorder_key)
    run = store.open_run(agent="sales-bot", principal="dana")
    store.dispose()  # no connection may cross the fork
    context = multiprocessing.get_context("fork")  # children reuse the loaded modules: no 3 s re-import
    start = context.Barrier(AGENTS)

    processes = [
        context.Process(target=append_as_agent, args=(store_url, recorder_key, [run.id], n, start))
        for n in range(AGENTS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(WAIT)

    assert [process.exitcode for process in processes] == [0] * AGENTS
    assert_unforked(store, run.id, AGENTS * APPENDS)
    store.dispose()
