"""Signature checks on worker processes: the very same report, problem for problem, as in one process.

A verifier that checks signatures on other processes acts on each verdict when it comes back; these
tests hold it to the report of the one-process verifier on records whose problems interleave with
the signatures (times found before a verdict, replays found only after one, flags, undo answers),
on every published known-answer file, when a worker dies or cannot start, and check that a small
record starts no worker at all.
"""

from __future__ import annotations

import gc
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from record_helpers import answer_body, call_body, pins, server_pins
from test_known_answers import EXAMPLES, EXPECTED, pinned

from hatp_journal.recorder.record import Check, RunStore, VerifyReport, verify_record
from hatp_journal.recorder.record import signature_workers as workers_module
from hatp_journal.recorder.record import verify as verify_module
from hatp_journal.recorder.record.entry_envelope import lean_entry
from hatp_journal.recorder.record.models import Entry
from hatp_journal.toolkit.signing import SigningKey, call_payload

ON_WORKERS = {"workers": 1, "pool_after": 0}
"""Workers from the first signature on, so that a small record exercises them."""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small batches (many of them, several out at once), and a count of the workers started."""
    monkeypatch.setattr(workers_module, "BATCH", 4)
    count: list[int] = []
    start = workers_module._Worker.start

    def counted() -> workers_module._Worker:
        count.append(1)
        return start()

    monkeypatch.setattr(workers_module._Worker, "start", staticmethod(counted))
    return count


def bad_time_call(server_key: SigningKey, n: int) -> dict[str, Any]:
    """A genuine call whose receipt's time is not written as a record's times are (BAD_TIME)."""
    body = call_body(server_key, n)
    journal = {k: v for k, v in body["journal"].items() if k != "receipt"}
    journal["receipt"] = server_key.sign(
        call_payload(journal, "update_deal", body["arguments"]), "soon"
    ).wire()
    return {**body, "journal": journal}


@pytest.fixture
def troubled(store: RunStore, server_key: SigningKey) -> bytes:
    """A closed run of 120 entries whose problems are spread among its signatures."""
    stranger = SigningKey.generate()
    run = store.open_run(agent="sales-bot", principal="dana")
    for n in range(1, 121):
        if n % 7 == 0:
            store.append(run.id, "call", call_body(stranger, n))  # RECEIPT_INVALID
        elif n % 11 == 0:
            store.append(run.id, "call", bad_time_call(server_key, n))  # BAD_TIME, then a good signature
        elif n % 13 == 0:
            store.append(run.id, "call", call_body(server_key, n - 12))  # RECEIPT_REPLAYED (once valid)
        elif n % 17 == 0:
            unresolved = {**call_body(stranger, n), "intake": {"status": "unresolved", "reason": "bad"}}
            store.append(run.id, "call", unresolved)  # flagged
        elif n % 19 == 0:
            store.append(run.id, "undo-outcome", answer_body(server_key, step=f"e{n - 1}", n=n - 2))
        elif n % 23 == 0:
            store.append(run.id, "note", {"text": "a note", "remedies": "e999"})  # found at once
        else:
            store.append(run.id, "call", call_body(server_key, n))
    store.close_run(run.id)
    return store.export(run.id, {"crm": [server_key.public]}).to_bytes()


def reports(data: bytes, **pinned_keys: Any) -> tuple[VerifyReport, VerifyReport, VerifyReport]:
    """The report in one process, and on workers from the bytes and from a file read entry by entry."""
    alone = verify_record(data, workers=0, **pinned_keys)
    return (
        alone,
        verify_record(data, **ON_WORKERS, **pinned_keys),
        verify_record(io.BytesIO(data), **ON_WORKERS, **pinned_keys),
    )


def collections_at_each_entry(collections: list[int], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets, as each entry is checked, how many collections were made so far."""
    during: list[int] = []
    check_entry = verify_module.RecordVerifier.entry

    def counted(self: verify_module.RecordVerifier, raw: Any, stored: bytes | None) -> None:
        during.append(len(collections))
        check_entry(self, raw, stored)

    monkeypatch.setattr(verify_module.RecordVerifier, "entry", counted)
    return during


def test_problems_found_on_workers_are_listed_exactly_as_in_one_process(
    troubled: bytes, store: RunStore, server_key: SigningKey, started: list[int]
) -> None:
    alone, pooled, streamed = reports(
        troubled, recorder_keys=pins(store), server_keys=server_pins(server_key)
    )

    assert pooled == alone
    assert streamed == alone
    assert len(started) == 2  # a worker for each of the two verifications on workers
    assert {Check.RECEIPT_INVALID, Check.BAD_TIME, Check.RECEIPT_REPLAYED} <= alone.codes()
    assert {Check.UNDO_RECEIPT_INVALID, Check.REMEDY_UNKNOWN_ENTRY} <= alone.codes()
    assert alone.flagged_codes() == {Check.RECEIPT_INVALID}
    # Found at once and found later, in the order of the entries all the same.
    entries = [int(problem.entry[1:]) for problem in pooled.problems if problem.entry]
    assert entries == sorted(entries)


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each garbage collection made from now on (automatic or asked for)."""
    made: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            made.append(info["generation"])

    gc.callbacks.append(counted)  # the list the collector calls: it cannot be replaced
    try:
        yield made
    finally:
        gc.callbacks.remove(counted)


def test_the_collector_does_not_walk_the_entries_waiting_for_their_verdicts(
    troubled: bytes,
    store: RunStore,
    server_key: SigningKey,
    collections: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}
    alone = verify_record(troubled, workers=0, **keys)
    during = collections_at_each_entry(collections, monkeypatch)

    streamed = verify_record(io.BytesIO(troubled), **ON_WORKERS, **keys)

    assert streamed == alone
    assert len(during) == 120
    assert during[-1] == during[0]  # 120 entries, fewer than COLLECT_EVERY: not one collection among them
    assert gc.isenabled()


def test_cyclic_garbage_is_still_collected_every_so_many_entries(
    troubled: bytes,
    store: RunStore,
    server_key: SigningKey,
    collections: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(verify_module, "COLLECT_EVERY", 50)
    keys = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}
    during = collections_at_each_entry(collections, monkeypatch)

    report = verify_record(io.BytesIO(troubled), **ON_WORKERS, **keys)

    assert report.problems  # the troubled record, verified to its end
    assert len(during) == 120
    assert collections[during[0] : during[-1]] == [2, 2]  # after entries 50 and 100: full collections
    assert gc.isenabled()


@pytest.mark.parametrize("case", EXPECTED, ids=[case["file"] for case in EXPECTED])
def test_every_known_answer_file_gets_the_same_report_on_workers(
    case: dict[str, Any], started: list[int]
) -> None:
    data = (EXAMPLES / "tampered" / case["file"]).read_bytes()
    keys = pinned(case["withHead"], case)

    alone = verify_record(data, workers=0, **keys)
    streamed = verify_record(io.BytesIO(data), **ON_WORKERS, **keys)  # as `hatp-recorder verify` reads

    assert streamed == alone
    assert sorted(streamed.codes()) == case["codes"]
    assert sorted(streamed.flagged_codes()) == case["flagged"]
    assert started


def test_the_genuine_known_answer_record_verifies_on_workers() -> None:
    report = verify_record(EXAMPLES / "run-record.json", **ON_WORKERS, **pinned(head=True))

    assert report.ok, report.problems
    assert report.receipts_checked == 9


def test_a_small_record_starts_no_worker(started: list[int]) -> None:
    report = verify_record(EXAMPLES / "run-record.json", **pinned(head=True))

    assert report.ok
    assert started == []


def test_a_worker_that_dies_leaves_the_report_unchanged(
    troubled: bytes, store: RunStore, server_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}
    alone = verify_record(troubled, workers=0, **keys)
    monkeypatch.setattr(workers_module, "BATCH", 4)
    # Reads its first batch and leaves without a word: as a worker killed mid-run would.
    monkeypatch.setattr(workers_module, "WORKER_SOURCE", "import sys; sys.stdin.buffer.read(8)")

    assert verify_record(troubled, **ON_WORKERS, **keys) == alone


def test_workers_that_cannot_start_leave_the_report_unchanged(
    troubled: bytes, store: RunStore, server_key: SigningKey, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}
    alone = verify_record(troubled, workers=0, **keys)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))

    assert verify_record(troubled, **ON_WORKERS, **keys) == alone


def test_a_forged_signature_is_found_on_a_worker_not_taken_on_trust(
    store: RunStore, server_key: SigningKey, started: list[int]
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    for n in range(1, 10):
        store.append(run.id, "call", call_body(server_key, n))
    record = json.loads(store.export(run.id).to_bytes())
    signature = record["entries"][4]["body"]["journal"]["receipt"]["sig"]
    # The same length, one character changed: a signature of the right form that does not check.
    flipped = ("B" if signature[10] == "A" else "A").join([signature[:10], signature[11:]])
    record["entries"][4]["body"]["journal"]["receipt"]["sig"] = flipped

    report = verify_record(
        record, **ON_WORKERS, recorder_keys=pins(store), server_keys=server_pins(server_key)
    )

    assert started
    assert (Check.RECEIPT_INVALID, "e5") in {(p.check, p.entry) for p in report.problems}


def test_a_token_member_spelled_with_an_escape_is_still_found(
    store: RunStore, server_key: SigningKey
) -> None:
    """Entries whose bytes never name ``compensationToken`` skip the search for it: one that spells
    it with a ``\\u`` escape names it all the same, and is found."""
    run = store.open_run(agent="sales-bot", principal="dana")
    body = call_body(server_key, 1)
    store.append(run.id, "call", {**body, "journal": {**body["journal"], "compensationToken": "ctk_1"}})
    data = store.export(run.id).to_bytes()
    escaped = data.replace(b'"compensationToken"', b'"compensation\\u0054oken"')
    assert escaped != data

    for record in (data, escaped, io.BytesIO(escaped)):
        report = verify_record(record, recorder_keys=pins(store), server_keys=server_pins(server_key))
        assert Check.TOKEN_IN_RECORD in report.codes()


def test_an_entry_as_the_recorder_writes_it_is_taken_as_the_strict_model_takes_it() -> None:
    for raw in json.loads((EXAMPLES / "run-record.json").read_bytes())["entries"]:
        assert lean_entry(raw) == Entry.model_validate(raw, strict=True)
        assert lean_entry(raw).model_fields_set == Entry.model_validate(raw, strict=True).model_fields_set  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "change",
    [
        {"seq": True},
        {"seq": 0},
        {"seq": 1.0},
        {"kind": ""},
        {"body": []},
        {"extra": 1},
        {"hash": None},
    ],
    ids=["seq-true", "seq-0", "seq-float", "kind-empty", "body-list", "extra-member", "hash-null"],
)
def test_an_entry_of_any_other_shape_is_left_to_the_model(change: dict[str, Any]) -> None:
    raw = {**json.loads((EXAMPLES / "run-record.json").read_bytes())["entries"][0], **change}
    renamed = {("prev_hash" if k == "prevHash" else k): v for k, v in raw.items()}

    assert lean_entry(raw) is None
    assert lean_entry(renamed) is None  # the model takes snake_case too: it says what it makes of it
