"""Long records in little memory: an export streamed entry by entry writes exactly the model's bytes,
and a file verified one entry at a time gets exactly the report its bytes get."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from record_helpers import TickingClock, answer_body, call_body, fill, pins, server_pins

from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.record import Check, RunStore, UnknownRun, VerifyReport, verify_record
from hatp_journal.recorder.record import stream as stream_module
from hatp_journal.recorder.record import verify as verify_module
from hatp_journal.recorder.record.export import export_run, export_run_to
from hatp_journal.toolkit.signing import SigningKey

# -- exporting ------------------------------------------------------------------------------------


def empty_run(store: RunStore, server_key: SigningKey) -> str:
    return store.open_run(agent="sales-bot", principal="dana").id


def calls_and_notes(store: RunStore, server_key: SigningKey) -> str:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 12, server_key)
    store.append(run.id, "undo-outcome", answer_body(server_key))
    store.close_run(run.id)
    store.append(run.id, "note", {"after": "close"})
    return run.id


def decisions_naming_directories(store: RunStore, server_key: SigningKey) -> str:
    run = store.open_run(agent="sales-bot", principal="dana")
    first = store.keep_directory({"people": [{"id": "human://acme.com/lee", "publicKey": "a"}]})
    second = store.keep_directory({"people": [{"id": "human://acme.com/kim", "publicKey": "b"}]})
    store.keep_directory({"people": []})  # kept, named by no decision of this run: not shipped
    for directory in (second, first, second, "sha256:" + "0" * 64, 7):
        store.append(run.id, "ask", {"server": "crm", "tool": "update_deal", "arguments": {}})
        store.append(run.id, "decision", {"ask": "e1", "directory": directory})
    store.append(run.id, "note", {"directory": first})  # not a decision: names nothing
    return run.id


def bodies_of_every_shape(store: RunStore, server_key: SigningKey) -> str:
    run = store.open_run(agent="sales-bot\x1f", principal='dana "the closer"')
    bodies: list[dict[str, Any]] = [
        {"big": 5.20913740660991e16, "huge": 1e21, "tiny": 5e-324, "whole": 2.0, "neg": -0.5},
        {"text": 'Proposal → Won, "quoted", \\ back, \n new line, \u2028, 🦊', "ключ": "значение"},
        {',"id":"e9"': ',"hash":"x"', "nested": [{"id": "e1", "kind": "call"}, [], {}]},
        {},
    ]
    for body in bodies:
        store.append(run.id, "note", body)
    return run.id


def kinds_that_look_like_members(store: RunStore, server_key: SigningKey) -> str:
    run = store.open_run(agent="sales-bot", principal="dana", run_id='run_,"id":"e1"')
    store.append(run.id, 'kind ,"id":"e1","kind":"x"', {"server": 'a "b"'})
    store.append(run.id, ",", {"id": "e1", "kind": "call", "hash": "sha256:"})
    return run.id


RUNS = [
    empty_run,
    calls_and_notes,
    decisions_naming_directories,
    bodies_of_every_shape,
    kinds_that_look_like_members,
]


def streamed(store: RunStore, run_id: str, server_keys: Any = None) -> bytes:
    out = io.BytesIO()
    store.export_to(run_id, out, server_keys)
    return out.getvalue()


@pytest.mark.parametrize("build", RUNS, ids=lambda build: build.__name__)
def test_a_streamed_export_writes_exactly_the_bytes_of_the_model_export(
    build: Callable[[RunStore, SigningKey], str], store: RunStore, server_key: SigningKey
) -> None:
    run_id = build(store, server_key)
    keys = {"crm": [server_key.public]}

    first = streamed(store, run_id, keys)  # signs the head: it moved since the last checkpoint
    model = store.export(run_id, keys)  # signs nothing: the head did not move
    store.append(run_id, "note", {"later": True})
    model_first = store.export(run_id, keys).to_bytes()

    assert first == model.to_bytes()
    assert streamed(store, run_id, keys) == model_first


def test_a_streamed_export_ships_the_directories_its_decisions_name_and_no_other(
    store: RunStore, server_key: SigningKey
) -> None:
    run_id = decisions_naming_directories(store, server_key)

    shipped = json.loads(streamed(store, run_id))["directories"]

    assert sorted(people["people"][0]["id"] for people in shipped.values()) == [
        "human://acme.com/kim",
        "human://acme.com/lee",
    ]


def test_a_streamed_export_ships_the_keys_pinned_for_exactly_the_servers_its_entries_name(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "call", call_body(server_key, 1))
    store.append(run.id, "call", call_body(server_key, 2, server="calendar"))
    store.append(run.id, "note", {"server": 3, "about": {"server": "nested"}})
    pins_kept = PinStore(store.engine)
    for server in ("crm", "calendar", "nested", "email"):
        pins_kept.pin_first(server, {server_key.kid: server_key.public})

    data = streamed(store, run.id)

    assert sorted(json.loads(data)["serverKeys"]) == ["calendar", "crm"]
    assert data == store.export(run.id).to_bytes()
    assert json.loads(streamed(store, run.id, {}))["serverKeys"] == {}


def test_the_core_road_streams_the_same_bytes_as_the_sqlite_driver(
    tmp_path: Path, recorder_key: SigningKey, server_key: SigningKey
) -> None:
    driver = RunStore(tmp_path / "driver.db", recorder_key, checkpoint_every=3, clock=TickingClock())
    core = RunStore(tmp_path / "core.db", recorder_key, checkpoint_every=3, clock=TickingClock())
    core._sqlite_driver = False  # the road other databases take; private, and this test checks both
    for store in (driver, core):
        store.open_run(agent="sales-bot", principal="dana", run_id="run_same")
        fill(store, "run_same", 8, server_key)

    assert streamed(driver, "run_same") == streamed(core, "run_same") == driver.export("run_same").to_bytes()
    for store in (driver, core):
        store.dispose()


def test_a_streamed_export_of_an_unknown_run_writes_nothing(store: RunStore) -> None:
    out = io.BytesIO()

    with pytest.raises(UnknownRun):
        store.export_to("run_missing", out)
    assert out.getvalue() == b""


def test_exporting_a_run_to_a_file_writes_it_whole_or_leaves_nothing_behind(
    store: RunStore, server_key: SigningKey, tmp_path: Path
) -> None:
    run_id = calls_and_notes(store, server_key)
    PinStore(store.engine).pin_first("crm", {server_key.kid: server_key.public})
    (tmp_path / "old.json").write_text("an older export")

    head = export_run_to(store, run_id, tmp_path / "old.json")
    with pytest.raises(UnknownRun):
        export_run_to(store, "run_missing", tmp_path / "missing.json")

    assert (tmp_path / "old.json").read_bytes() == export_run(store, run_id).to_bytes()
    assert head == store.latest_checkpoint(run_id)
    assert not (tmp_path / "missing.json").exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".partial")] == []


class AppendingWhileWritten(io.BytesIO):
    """An output file that lets another agent append to the run at chosen moments of the export."""

    def __init__(self, agent: RunStore, run_id: str, at_writes: set[int]) -> None:
        super().__init__()
        self.agent, self.run_id, self.at_writes, self.writes = agent, run_id, at_writes, 0

    def write(self, data: Any) -> int:
        self.writes += 1
        if self.writes in self.at_writes:
            self.agent.append(self.run_id, "note", {"appended": "during the export"})
        return super().write(data)


def test_an_export_while_an_agent_appends_is_the_snapshot_at_its_signed_head_and_keeps_no_one_waiting(
    tmp_path: Path, recorder_key: SigningKey, server_key: SigningKey
) -> None:
    # On the clock the receipts were issued by (a receipt from before the run opened is replayed).
    exporter = RunStore(tmp_path / "shared.db", recorder_key, checkpoint_every=4, clock=TickingClock())
    agent = RunStore(tmp_path / "shared.db", recorder_key, checkpoint_every=4, clock=TickingClock())
    run = exporter.open_run(agent="sales-bot", principal="dana")
    fill(exporter, run.id, 6, server_key)
    # Before the entries (after the head was signed), and while they are being written.
    out = AppendingWhileWritten(agent, run.id, at_writes={1, 3, 5})

    last = exporter.export_to(run.id, out)

    report = verify_record(
        io.BytesIO(out.getvalue()), recorder_keys=pins(exporter), server_keys=server_pins(server_key)
    )
    assert report.ok, report.problems
    assert (report.entries, last.size, last.reason) == (6, 6, "export")
    assert len(agent.entries(run.id)) == 9
    assert streamed(exporter, run.id) == exporter.export(run.id).to_bytes()
    for store in (exporter, agent):
        store.dispose()


# -- verifying a file -----------------------------------------------------------------------------


def report_of_bytes(data: bytes, **pinned: Any) -> VerifyReport:
    return verify_record(data, **pinned)


def report_of_file(data: bytes, folder: Path, **pinned: Any) -> VerifyReport:
    path = folder / "record.json"
    path.write_bytes(data)
    return verify_record(path, **pinned)


@pytest.fixture
def read_one_entry_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """No file is read whole: one the streamed read refuses gets a report saying only that."""
    monkeypatch.setattr(verify_module, "WHOLE_FILE_LIMIT", 0)


@pytest.fixture
def exported(store: RunStore, server_key: SigningKey) -> bytes:
    """The record of a run with every shape of body, signed calls and an undo answer."""
    run_id = bodies_of_every_shape(store, server_key)
    fill(store, run_id, 11, server_key)
    store.append(run_id, "undo-outcome", answer_body(server_key, step="e5", n=5))
    store.close_run(run_id)
    return streamed(store, run_id, {"crm": [server_key.public]})


def test_a_file_read_a_few_bytes_at_a_time_gets_the_report_of_its_bytes(
    exported: bytes,
    store: RunStore,
    server_key: SigningKey,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    read_one_entry_at_a_time: None,
) -> None:
    # Chunks that cut characters, numbers, strings and escapes anywhere; a tail read in steps.
    monkeypatch.setattr(stream_module, "CHUNK", 7)
    monkeypatch.setattr(stream_module, "_TAIL_WINDOW", 5)
    pinned = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}
    edited = exported.replace(b"Proposal", b"Pr0posal", 1)

    clean = report_of_file(exported, tmp_path, **pinned)

    assert clean.ok, clean.problems
    assert clean == report_of_bytes(exported, **pinned)
    assert report_of_file(edited, tmp_path, **pinned) == report_of_bytes(edited, **pinned)
    assert report_of_bytes(edited, **pinned).codes() == {Check.HASH_MISMATCH}


def entries_first(data: bytes) -> bytes:
    record = json.loads(data)
    entries = record.pop("entries")
    return json.dumps({"entries": entries, **record}, separators=(",", ":"), ensure_ascii=False).encode()


def entries_last(data: bytes) -> bytes:
    record = json.loads(data)
    entries = record.pop("entries")
    return json.dumps({**record, "entries": entries}, separators=(",", ":"), ensure_ascii=False).encode()


def not_canonical(data: bytes) -> bytes:
    return data.replace(b'"hash":"sha256:', b'"hash":"sha256\\u003a', 2)


STILL_LAID_OUT: dict[str, Callable[[bytes], bytes]] = {
    "hash members written with an escape": not_canonical,
    "an id written with an escape": lambda data: data.replace(b'"id":"e3"', b'"id":"\\u00653"', 1),
    "a seq written as a float": lambda data: data.replace(b'"seq":4,', b'"seq":4.0,', 1),
    "a key of another algorithm, and hash members written with an escape": lambda data: not_canonical(
        data.replace(b'"recorderKey":{"alg":"Ed25519"', b'"recorderKey":{"alg":"Ed448"', 1)
    ),
    "nothing but entries": lambda data: b'{"entries":[]}',
    "entries last": entries_last,
    "every character beyond ASCII escaped": lambda data: json.dumps(
        json.loads(data), separators=(",", ":")
    ).encode(),
}
"""Changes after which the file is still laid out so that it is read one entry at a time (with
``NOT_CANONICAL`` when its bytes are not the canonical ones)."""

LAID_OUT_OTHERWISE: dict[str, Callable[[bytes], bytes]] = {
    "pretty-printed": lambda data: json.dumps(json.loads(data), indent=1).encode(),
    "entries first": entries_first,
    "a member twice in an entry": lambda data: data.replace(b'"kind":"note"', b'"kind":"x","kind":"note"', 1),
    "a member twice in a body": lambda data: data.replace(b'{"big":', b'{"big":1,"big":', 1),
    "a member twice at the top": lambda data: data.replace(b'"format":', b'"format":"x","format":', 1),
    "a byte that is not UTF-8": lambda data: data.replace(b"Proposal", b"Pro\xffosal", 1),
    "a byte order mark": lambda data: b"\xef\xbb\xbf" + data,
    "a space at the end": lambda data: data + b" ",
    "cut short": lambda data: data[: len(data) * 2 // 3],
    "cut after the entries": lambda data: data[: data.index(b'],"format"') + 1],
    "no entries": lambda data: data.replace(b'"entries":', b'"entrees":', 1),
    "entries not a list": lambda data: data.replace(b'"entries":[', b'"entries":{"x":[', 1).replace(
        b'],"format"', b']},"format"', 1
    ),
    "an entry that is not an object": lambda data: data.replace(b'"entries":[', b'"entries":[7,', 1),
    "not JSON": lambda data: b"[" * 100_000 + b"]" * 100_000,
}
"""Changes after which it is not: read whole, the slow way (when small enough)."""


@pytest.mark.parametrize("change", STILL_LAID_OUT.values(), ids=STILL_LAID_OUT.keys())
def test_a_wrong_file_still_laid_out_for_reading_one_entry_at_a_time_gets_the_report_of_its_bytes(
    change: Callable[[bytes], bytes],
    exported: bytes,
    store: RunStore,
    server_key: SigningKey,
    tmp_path: Path,
    read_one_entry_at_a_time: None,
) -> None:
    data = change(exported)
    pinned = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}

    report = report_of_file(data, tmp_path, **pinned)

    assert not report.ok
    assert report == report_of_bytes(data, **pinned)


@pytest.mark.parametrize("change", LAID_OUT_OTHERWISE.values(), ids=LAID_OUT_OTHERWISE.keys())
def test_a_file_not_laid_out_as_the_recorder_writes_it_is_read_whole_and_gets_the_report_of_its_bytes(
    change: Callable[[bytes], bytes],
    exported: bytes,
    store: RunStore,
    server_key: SigningKey,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = change(exported)
    pinned = {"recorder_keys": pins(store), "server_keys": server_pins(server_key)}

    report = report_of_file(data, tmp_path, **pinned)
    monkeypatch.setattr(verify_module, "WHOLE_FILE_LIMIT", 0)
    unread = report_of_file(data, tmp_path, **pinned)

    assert not report.ok
    assert report == report_of_bytes(data, **pinned)
    assert [p.entry for p in unread.problems] == [None]
    assert unread.problems[0].detail.startswith(("not laid out as the Recorder writes it", "not UTF-8"))


def test_an_absurdly_long_entry_is_malformed_unread_and_the_rest_is_still_checked(
    store: RunStore, tmp_path: Path, read_one_entry_at_a_time: None
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "note", {"n": 1})
    # Quotes, escapes and brackets inside the long string: none of them may end the entry early.
    long_text = '"]}{[\\' * (stream_module.MAX_ENTRY // 6 + 1)
    store.append(run.id, "note", {"text": long_text, "nested": [{"a": [1, {"b": "}"}]}]})
    store.append(run.id, "note", {"n": 3})
    store.append(run.id, "note", {"id": "e4", "hash": "sha256:" + "f" * 64})
    data = streamed(store, run.id)

    report = report_of_file(data, tmp_path, recorder_keys=pins(store))

    assert report.entries == 4
    assert [(p.entry, p.check) for p in report.problems][:1] == [("e2", Check.MALFORMED)]
    assert report_of_bytes(data, recorder_keys=pins(store)).ok  # the limit is the streamed read's


def test_a_large_file_not_laid_out_so_is_reported_as_such_without_being_read_whole(
    exported: bytes, store: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_module, "WHOLE_FILE_LIMIT", len(exported) // 2)
    pretty = json.dumps(json.loads(exported), indent=1).encode()
    not_utf8 = exported.replace(b"Proposal", b"Pro\xffosal", 1)

    reformatted = report_of_file(pretty, tmp_path, recorder_keys=pins(store))
    garbled = report_of_file(not_utf8, tmp_path, recorder_keys=pins(store))

    assert [(p.entry, p.check) for p in reformatted.problems] == [(None, Check.NOT_CANONICAL)]
    assert [(p.entry, p.check) for p in garbled.problems] == [(None, Check.MALFORMED)]
    where = not_utf8.index(b"\xff")
    assert garbled.problems[0].detail == f"not UTF-8 at byte {where}"


def test_a_pipe_is_verified_as_its_file_is(
    exported: bytes, store: RunStore, tmp_path: Path, read_one_entry_at_a_time: None
) -> None:
    path = tmp_path / "record.json"
    path.write_bytes(exported)

    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        assert cat.stdout is not None
        assert not cat.stdout.seekable()
        report = verify_record(cat.stdout, recorder_keys=pins(store))

    assert report.ok, report.problems
    assert report == verify_record(path, recorder_keys=pins(store))
