"""verify_record: a clean record passes; each kind of tampering is reported with its code."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from record_helpers import AT, answer_body, call_body, fill, pins, server_pins, tampered

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.recorder.record import Check, RunRecordFile, RunStore, VerifyReport, verify_record
from hatp_journal.recorder.record.chain import seal
from hatp_journal.recorder.record.models import checkpoint_payload
from hatp_journal.toolkit.signing import SigningKey, VerifyKey


@pytest.fixture
def exported(store: RunStore, server_key: SigningKey) -> dict[str, Any]:
    """A closed 12-entry run with signed calls, exported and read back as a JSON object."""
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 12, server_key)
    store.close_run(run.id)
    return json.loads(store.export(run.id, {"crm": [server_key.public]}).to_bytes())


def verified(record: Any, **pinned: Any) -> VerifyReport:
    """``verify_record``'s report on ``record``, which it must also give on the record's exported
    bytes, read whole and read one entry at a time from a file."""
    report = verify_record(record, **pinned)
    if isinstance(record, bytes):
        data = record
    else:
        data = record.to_bytes() if isinstance(record, RunRecordFile) else canonical_bytes(record)
        assert verify_record(data, **pinned) == report
    assert verify_record(io.BytesIO(data), **pinned) == verify_record(data, **pinned)
    return report


def check(record: Any, store: RunStore, server_key: SigningKey, **more: Any) -> set[str]:
    return verified(record, recorder_keys=pins(store), server_keys=server_pins(server_key), **more).codes()


def forge_entry(record: dict[str, Any], body: dict[str, Any]) -> None:
    """Append an entry with a correct hash and link, as anyone without the Recorder key could."""
    last = record["entries"][-1]
    seq = last["seq"] + 1
    hashed = {
        "run": last["run"],
        "seq": seq,
        "id": f"e{seq}",
        "time": AT,
        "kind": "note",
        "body": body,
        "prevHash": last["hash"],
    }
    record["entries"].append({**hashed, "hash": seal(hashed)[1]})


def test_a_clean_record_verifies_as_a_model_an_object_its_exported_bytes_and_its_file(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any], tmp_path: Path
) -> None:
    model = RunRecordFile.model_validate(exported)

    path = tmp_path / "record.json"
    path.write_bytes(model.to_bytes())
    forms = (model, exported, model.to_bytes(), model.to_bytes().decode(), path, io.BytesIO(model.to_bytes()))

    for form in forms:
        report = verify_record(form, recorder_keys=pins(store), server_keys=server_pins(server_key))
        assert report.ok, report.problems
        assert (report.entries, report.signed_size, report.receipts_checked) == (12, 12, 3)


def test_a_reformatted_file_is_reported_as_not_the_bytes_the_recorder_wrote(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    pretty = json.dumps(exported, indent=2).encode()

    assert check(pretty, store, server_key) == {Check.NOT_CANONICAL}


def test_a_changed_byte_that_parses_to_the_same_value_is_still_detected(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot\x1f", principal="dana")
    store.append(run.id, "note", {"amount": 1e21})
    data = store.export(run.id).to_bytes()
    in_entry = data.replace(b"1e+21", b"1E+21")
    in_run = data.replace(b"\\u001f", b"\\u001F")

    assert in_entry != data != in_run
    assert check(in_entry, store, server_key) == {Check.NOT_CANONICAL}  # not a changed value
    assert check(in_run, store, server_key) == {Check.NOT_CANONICAL}


def test_a_duplicated_json_member_is_detected_though_the_parser_keeps_only_one(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    data = RunRecordFile.model_validate(exported).to_bytes()
    in_entry = data.replace(b'"kind":"note"', b'"kind":"call","kind":"note"', 1)
    at_top = data.replace(b'"format":', b'"format":"x","format":', 1)

    entry_report = verified(in_entry, recorder_keys=pins(store), server_keys=server_pins(server_key))
    top_report = verified(at_top, recorder_keys=pins(store), server_keys=server_pins(server_key))

    assert entry_report.codes() == top_report.codes() == {Check.DUPLICATE_KEY, Check.NOT_CANONICAL}
    assert [p.entry for p in entry_report.problems if p.check == Check.DUPLICATE_KEY] == ["e2"]
    assert [p.entry for p in top_report.problems if p.check == Check.DUPLICATE_KEY] == [None]


def test_a_truncated_record_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: r["entries"].__delitem__(slice(9, None)))

    assert Check.CHECKPOINT_MISMATCH in check(record, store, server_key)


def test_entries_after_the_last_signed_checkpoint_are_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: forge_entry(r, {"text": "nothing to see"}))

    assert check(record, store, server_key) == {Check.UNSIGNED_TAIL}


def test_a_deleted_entry_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: r["entries"].pop(3))

    assert {Check.SEQ_GAP, Check.CHAIN_BROKEN} <= check(record, store, server_key)


def test_swapped_entries_are_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    def swap(record: dict[str, Any]) -> None:
        entries = record["entries"]
        entries[3], entries[4] = entries[4], entries[3]

    assert {Check.SEQ_GAP, Check.CHAIN_BROKEN} <= check(tampered(exported, swap), store, server_key)


def test_a_duplicated_entry_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: r["entries"].insert(4, r["entries"][3]))

    assert {Check.SEQ_GAP, Check.CHAIN_BROKEN} <= check(record, store, server_key)


def test_an_entry_renamed_to_another_id_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: r["entries"][3].__setitem__("id", "e40"))

    assert Check.ID_MISMATCH in check(record, store, server_key)


def test_an_entry_spliced_in_from_another_run_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    other = store.open_run(agent="sales-bot", principal="dana")
    fill(store, other.id, 12, server_key)
    foreign = store.export(other.id).wire()["entries"][5]

    record = tampered(exported, lambda r: r["entries"].__setitem__(5, foreign))

    assert {Check.RUN_MISMATCH, Check.CHAIN_BROKEN} <= check(record, store, server_key)


def test_an_edited_entry_is_detected_even_when_its_hash_and_links_are_recomputed(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    def edit(record: dict[str, Any]) -> None:
        record["entries"][7]["body"]["text"] = "edited"

    def rechain(record: dict[str, Any]) -> None:
        edit(record)
        previous = record["entries"][6]["hash"]
        for entry in record["entries"][7:]:
            entry["prevHash"] = previous
            entry["hash"] = previous = seal({k: v for k, v in entry.items() if k != "hash"})[1]

    assert check(tampered(exported, edit), store, server_key) == {Check.HASH_MISMATCH}
    assert Check.CHECKPOINT_MISMATCH in check(tampered(exported, rechain), store, server_key)


def test_changed_run_fields_break_the_chain_at_its_genesis(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(exported, lambda r: r["run"].__setitem__("principal", "eve"))

    assert Check.CHAIN_BROKEN in check(record, store, server_key)


def test_a_forged_receipt_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    body = call_body(SigningKey.generate(), 1)
    entry = store.append(run.id, "call", body)

    report = verified(store.export(run.id), recorder_keys=pins(store), server_keys=server_pins(server_key))

    assert [(p.entry, p.check) for p in report.problems] == [(entry.id, Check.RECEIPT_INVALID)]


def test_a_receipt_the_recorder_already_flagged_unresolved_is_reported_as_flagged_not_failed(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    body = {
        **call_body(SigningKey.generate(), 1),
        "intake": {"status": "unresolved", "reason": "bad receipt"},
    }
    store.append(run.id, "call", body)

    report = verified(store.export(run.id), recorder_keys=pins(store), server_keys=server_pins(server_key))

    assert report.ok
    assert [(p.entry, p.check) for p in report.flagged] == [("e1", Check.RECEIPT_INVALID)]


def test_undo_receipts_and_calls_that_keep_only_the_arguments_digest_are_verified_too(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    call = call_body(server_key, 1)
    digest_only = {k: v for k, v in call.items() if k != "arguments"}
    digest_only["argumentsDigest"] = sha256_digest(call["arguments"])
    forged_answer = answer_body(server_key)
    forged_answer["answer"]["versionLeft"] = "v99"
    store.append(run.id, "call", digest_only)
    store.append(run.id, "undo-outcome", answer_body(server_key))
    store.append(run.id, "undo-outcome", forged_answer)
    store.append(run.id, "undo-outcome", answer_body(server_key, n=2))  # about another token

    report = verified(store.export(run.id), recorder_keys=pins(store), server_keys=server_pins(server_key))

    assert [(p.entry, p.check) for p in report.problems] == [
        ("e3", Check.UNDO_RECEIPT_INVALID),
        ("e4", Check.UNDO_RECEIPT_INVALID),
    ]
    assert report.receipts_checked == 4


def test_a_substituted_recorder_key_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    mallory = SigningKey.generate()

    def resign(record: dict[str, Any]) -> None:
        record["entries"][2]["body"]["text"] = "rewritten"
        forge_entry(record, {})
        record["entries"] = [record["entries"][0]]
        for checkpoint in record["checkpoints"]:
            checkpoint["size"], checkpoint["head"] = 1, record["entries"][0]["hash"]
            payload = checkpoint_payload(record["run"]["id"], 1, checkpoint["head"], AT, checkpoint["reason"])
            checkpoint["at"] = AT
            checkpoint["receipt"] = mallory.sign(payload, AT).wire()
        record["recorderKey"] = mallory.public.wire().wire()

    codes = check(tampered(exported, resign), store, server_key)

    assert {Check.KEY_SUBSTITUTED, Check.BAD_CHECKPOINT_SIGNATURE} <= codes
    assert check(exported, store, server_key) == set()
    trusting_the_file = {mallory.kid: mallory.public}
    assert verified(exported, recorder_keys=trusting_the_file).codes() >= {Check.KEY_SUBSTITUTED}


def test_a_substituted_server_key_shipped_in_the_file_is_detected(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    record = tampered(
        exported, lambda r: r["serverKeys"].__setitem__("crm", [SigningKey.generate().public.wire().wire()])
    )

    assert check(record, store, server_key) == {Check.KEY_SUBSTITUTED}


def test_rollback_to_an_older_genuine_head_is_detected_only_by_a_verifier_holding_the_latest_head(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 6, server_key)
    older = store.export(run.id)
    fill(store, run.id, 4, server_key)
    latest = store.checkpoint(run.id, "approval")

    # The limit (docs/run-record.md): the older file is genuine and verifies on its own.
    assert check(older, store, server_key) == set()
    assert check(older, store, server_key, latest_head=latest) == {Check.ROLLBACK}
    assert check(older, store, server_key, latest_head=latest.wire()) == {Check.ROLLBACK}
    assert check(store.export(run.id), store, server_key, latest_head=latest) == set()


def test_a_latest_head_that_is_forged_or_of_another_run_is_not_trusted(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    run_id = exported["run"]["id"]
    last = exported["checkpoints"][-1]
    forged = {**last, "size": 40, "receipt": SigningKey.generate().sign({}, AT).wire()}
    other = store.open_run(agent="sales-bot", principal="dana")

    assert check(exported, store, server_key, latest_head=forged) == {Check.BAD_CHECKPOINT_SIGNATURE}
    assert check(exported, store, server_key, latest_head=store.checkpoint(other.id, "manual")) == {
        Check.RUN_MISMATCH
    }
    assert check(exported, store, server_key, latest_head={"run": run_id}) == {Check.MALFORMED}


def test_keys_not_pinned_are_taken_from_the_file_and_said_so_and_wrong_pins_fail_closed(
    store: RunStore, server_key: SigningKey, exported: dict[str, Any]
) -> None:
    no_keys: dict[str, VerifyKey] = {}
    stranger = SigningKey.generate()

    from_file = verified(exported)
    wrong = verified(exported, recorder_keys=no_keys, server_keys=server_pins(stranger)).codes()

    assert from_file.ok, from_file.problems
    assert from_file.trusted_from_file == ["the Recorder's key", "the keys of crm"]
    assert {Check.KEY_SUBSTITUTED, Check.BAD_CHECKPOINT_SIGNATURE, Check.RECEIPT_INVALID} <= wrong


def test_a_remedy_naming_an_earlier_entry_verifies_and_one_naming_no_earlier_entry_is_reported(
    store: RunStore,
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")
    store.append(run.id, "call", {"server": "email", "tool": "send_email", "arguments": {}})
    store.append(run.id, "call", {"remedies": "e1", "tool": "send_email", "arguments": {}})
    fixed = store.export(run.id).to_bytes()
    store.append(run.id, "call", {"remedies": "e4", "tool": "send_email", "arguments": {}})
    store.append(run.id, "call", {"remedies": ["e1"], "tool": "send_email", "arguments": {}})
    dangling = verified(store.export(run.id).to_bytes(), recorder_keys=pins(store))

    assert verified(fixed, recorder_keys=pins(store)).ok
    assert [(problem.entry, problem.check) for problem in dangling.problems] == [
        ("e3", Check.REMEDY_UNKNOWN_ENTRY),
        ("e4", Check.REMEDY_UNKNOWN_ENTRY),
    ]
