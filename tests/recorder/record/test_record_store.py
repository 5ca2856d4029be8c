"""The Run Record store: numbering, chaining, stored-as-written bytes, checkpoints, append-only.

Every test here runs on a SQLite file and on PostgreSQL (``store_url``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from record_helpers import TickingClock, fill, pins
from sqlalchemy import text
from sqlmodel import create_engine

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.recorder.record import (
    BadEntry,
    RunExists,
    RunStore,
    UnknownEntry,
    UnknownRun,
    genesis_hash,
    verify_record,
)
from hatp_journal.toolkit.signing import SigningKey, verify


@pytest.fixture
def store(store_url: str, recorder_key: SigningKey) -> Iterator[RunStore]:
    """conftest.py's store (signing every 5 entries, on a ticking clock), on SQLite and PostgreSQL."""
    runs = RunStore(store_url, recorder_key, checkpoint_every=5, clock=TickingClock())
    yield runs
    runs.dispose()


def test_entries_are_numbered_from_e1_and_chained_from_the_runs_genesis(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    first = store.append(run.id, "call", {"tool": "update_deal"})
    second = store.append(run.id, "decision", {"action": "ask"})

    assert run.id.startswith("run_")
    assert [(first.id, first.seq), (second.id, second.seq)] == [("e1", 1), ("e2", 2)]
    assert first.prev_hash == genesis_hash(run)
    assert second.prev_hash == first.hash
    assert first.hash == sha256_digest(first.hashed())
    assert store.entries(run.id) == [first, second]
    assert store.entry(run.id, "e2") == second


def test_each_entry_is_stored_as_the_canonical_bytes_that_were_hashed(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    entry = store.append(run.id, "note", {"z": 1, "a": "Proposal → Won", "nested": {"b": None, "a": [1.5]}})

    with store.engine.connect() as db:
        query = text("SELECT data, hash FROM rec_entry WHERE run = :run")
        data, stored_hash = db.execute(query, {"run": run.id}).one()

    assert data == canonical_bytes(entry.hashed())
    assert stored_hash == entry.hash == "sha256:" + hashlib.sha256(data).hexdigest()
    assert json.loads(data)["body"] == {"z": 1, "a": "Proposal → Won", "nested": {"b": None, "a": [1.5]}}


def test_the_store_offers_no_way_to_edit_or_delete_an_entry() -> None:
    public = {name for name in dir(RunStore) if not name.startswith("_")}  # its own and inherited

    assert public == {
        "append",
        "append_async",
        "append_many",
        "checkpoint",
        "checkpoints",
        "close_run",
        "directory",
        "dispose",
        "entries",
        "find_answer",
        "entry",
        "export",
        "export_to",
        "keep_directory",
        "latest_checkpoint",
        "open_run",
        "public_key",
        "run",
        "runs",
        # Read-only, for the witness sender (recorder/witness/sender.py):
        "entry_bytes",
        "signed_since",
    }


def test_a_checkpoint_is_signed_every_n_entries_and_every_one_is_kept(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 12)
    manual = store.checkpoint(run.id, "approval")

    checkpoints = store.checkpoints(run.id)
    entries = store.entries(run.id)
    assert [(c.size, c.reason) for c in checkpoints] == [(5, "every-n"), (10, "every-n"), (12, "approval")]
    assert [c.head for c in checkpoints] == [entries[4].hash, entries[9].hash, entries[11].hash]
    assert store.latest_checkpoint(run.id) == manual
    for checkpoint in checkpoints:
        assert verify(checkpoint.receipt, checkpoint.signed(), pins(store))


def test_an_empty_run_checkpoints_its_genesis(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")

    assert store.latest_checkpoint(run.id) is None
    checkpoint = store.checkpoint(run.id, "manual")
    assert (checkpoint.size, checkpoint.head) == (0, genesis_hash(run))
    assert verify_record(store.export(run.id), recorder_keys=pins(store)).ok


def test_closing_a_run_signs_its_head_and_sets_closed_at_once(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 3)

    first = store.close_run(run.id)
    store.append(run.id, "note", {"after": "close"})
    second = store.close_run(run.id)

    assert (first.size, first.reason, second.size) == (3, "close", 4)
    assert store.run(run.id).closed_at == first.at != second.at
    assert verify_record(store.export(run.id), recorder_keys=pins(store)).ok


def test_an_export_signs_a_fresh_head_only_when_the_head_moved(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 7)

    first = store.export(run.id)
    again = store.export(run.id)

    assert [(c.size, c.reason) for c in first.checkpoints] == [(5, "every-n"), (7, "export")]
    assert again.checkpoints == first.checkpoints
    assert first.recorder_key == store.public_key.wire()
    assert first.entries == store.entries(run.id)


def test_a_restarted_store_continues_the_same_chain(store_url: str, recorder_key: SigningKey) -> None:
    path = store_url
    before = RunStore(path, recorder_key, clock=TickingClock())
    run = before.open_run(agent="sales-bot", principal="dana", run_id="run_fixed")
    fill(before, run.id, 3)
    before.dispose()

    after = RunStore(path, recorder_key, clock=TickingClock())
    entry = after.append(run.id, "note", {"after": "restart"})

    assert entry.id == "e4"
    assert entry.prev_hash == after.entry(run.id, "e3").hash
    assert [r.id for r in after.runs()] == ["run_fixed"]
    assert verify_record(after.export(run.id), recorder_keys=pins(after)).ok
    after.dispose()


@pytest.mark.parametrize(
    "body",
    [{"x": math.nan}, {"x": 2**60}, {"x": "\ud800"}, {"x": {1, 2}}, {"x": b"bytes"}],
    ids=["nan", "big-int", "lone-surrogate", "set", "bytes"],
)
def test_a_body_that_is_not_canonical_json_is_refused_and_nothing_is_written(
    store: RunStore, body: dict[str, object]
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")

    with pytest.raises(BadEntry):
        store.append(run.id, "call", body)
    assert store.entries(run.id) == []
    assert store.append(run.id, "call", {"ok": True}).id == "e1"


def test_unknown_runs_and_entries_and_reused_run_ids_are_refused(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana", run_id="run_one")
    store.append(run.id, "note", {})

    with pytest.raises(UnknownRun):
        store.append("run_missing", "note", {})
    with pytest.raises(UnknownRun):
        store.export("run_missing")
    with pytest.raises(UnknownEntry):
        store.entry(run.id, "e2")
    with pytest.raises(UnknownEntry):
        store.entry(run.id, "x1")
    with pytest.raises(RunExists):
        store.open_run(agent="other", principal="eve", run_id="run_one")
    with pytest.raises(BadEntry):
        store.append(run.id, "", {})


def test_the_store_accepts_a_sqlalchemy_url_or_an_engine(tmp_path: Path, recorder_key: SigningKey) -> None:
    by_url = RunStore(f"sqlite:///{tmp_path / 'url.db'}", recorder_key)
    by_engine = RunStore(create_engine(f"sqlite:///{tmp_path / 'engine.db'}"), recorder_key)

    for runs in (by_url, by_engine):
        run = runs.open_run(agent="sales-bot", principal="dana")
        fill(runs, run.id, 2)
        assert verify_record(runs.export(run.id), recorder_keys=pins(runs)).ok
        runs.dispose()


def test_a_double_beyond_two_to_the_53_reads_back_as_the_same_double(store: RunStore) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    body = {"big": 5.20913740660991e16, "huge": 1e21, "whole": 2.0}

    entry = store.append(run.id, "note", body)

    assert store.entry(run.id, entry.id).body == body
    assert type(store.entry(run.id, entry.id).body["big"]) is float
    assert verify_record(store.export(run.id).to_bytes(), recorder_keys=pins(store)).ok
