"""Appends from async code: committed on a writer thread, several per transaction, never forked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from record_helpers import pins
from test_record_concurrency import assert_unforked

from hatp_journal.recorder.record import BadEntry, RunStore, UnknownRun, verify_record
from hatp_journal.toolkit.signing import SigningKey

pytestmark = pytest.mark.anyio

AGENTS = 8
APPENDS = 25


async def test_eight_agents_appending_at_once_each_get_one_contiguous_chain_and_share_commits(
    tmp_path: Path, recorder_key: SigningKey
) -> None:
    store = RunStore(tmp_path / "shared.db", recorder_key, checkpoint_every=7)
    runs = [store.open_run(agent=f"agent-{n}", principal="dana").id for n in range(AGENTS)]
    batches: list[int] = []
    append_many = store.append_many

    def counted(appends: list) -> list:  # type: ignore[type-arg]
        batches.append(len(appends))
        return append_many(appends)

    store.append_many = counted  # type: ignore[method-assign]

    async def agent(run: str) -> None:
        for n in range(APPENDS):
            await store.append_async(run, "call", {"run": run, "n": n})

    await asyncio.gather(*(agent(run) for run in runs))

    for run in runs:
        assert_unforked(store, run, APPENDS)
        assert [entry.body["n"] for entry in store.entries(run)] == list(range(APPENDS))
    assert sum(batches) == AGENTS * APPENDS
    assert max(batches) > 1  # agents waiting together went into one transaction
    store.dispose()


async def test_a_bad_entry_in_a_batch_fails_alone_and_the_others_are_committed(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana").id
    bodies = [{"n": 1}, {"n": 2**60}, {"n": 3}]  # 2^60 has no RFC 8785 form

    outcomes = await asyncio.gather(
        *(store.append_async(run, "call", body) for body in bodies), return_exceptions=True
    )

    assert isinstance(outcomes[1], BadEntry)
    assert [entry.body["n"] for entry in store.entries(run)] == [1, 3]
    assert verify_record(store.export(run).to_bytes(), recorder_keys=pins(store)).ok


async def test_an_append_to_an_unknown_run_is_refused_and_the_writer_keeps_going(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana").id

    with pytest.raises(UnknownRun):
        await store.append_async("run_nobody", "call", {"n": 0})
    with pytest.raises(BadEntry):
        await store.append_async(run, "", {"n": 0})
    entry = await store.append_async(run, "call", {"n": 1})

    assert entry.seq == 1
    assert store.entries(run)[0].hash == entry.hash
