"""The committed JSON Schema of the Run Record matches the code; the public API is pinned; the doc runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import hatp_journal.recorder.record as record
from hatp_journal.recorder.record import record_schema
from hatp_journal.toolkit.schema import render

ROOT = Path(__file__).parents[3]
SCHEMA = ROOT / "docs" / "schema" / "run-record.schema.json"
DOC = ROOT / "docs" / "run-record.md"


def test_the_committed_run_record_schema_equals_the_code() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == render(record_schema()), (
        "docs/schema/run-record.schema.json drifted; run `python -m hatp_journal.recorder.record.schema`"
    )


def test_the_schema_uses_camel_case_and_names_the_format() -> None:
    schema = record_schema()

    members = {"format", "run", "entries", "checkpoints", "recorderKey", "serverKeys", "directories"}
    assert members | {"cosignatures"} == set(schema["properties"])
    assert schema["properties"]["format"]["const"] == "hatp-run-record/2"
    assert "prevHash" in schema["$defs"]["Entry"]["properties"]


def test_the_public_api_is_exactly_this() -> None:
    assert sorted(record.__all__) == sorted(
        [
            "RECORD_FORMAT",
            "BadEntry",
            "Check",
            "Checkpoint",
            "Entry",
            "Problem",
            "RecordError",
            "Run",
            "RunExists",
            "RunRecordFile",
            "RunStore",
            "UnknownEntry",
            "UnknownRun",
            "VerifyReport",
            "genesis_hash",
            "record_schema",
            "verify_record",
        ]
    )
    for name in record.__all__:
        assert getattr(record, name) is not None


def test_the_check_codes_are_stable() -> None:
    assert {code.value for code in record.Check} == {
        "MALFORMED",
        "NOT_CANONICAL",
        "HASH_MISMATCH",
        "CHAIN_BROKEN",
        "SEQ_GAP",
        "ID_MISMATCH",
        "RUN_MISMATCH",
        "BAD_CHECKPOINT_SIGNATURE",
        "CHECKPOINT_MISMATCH",
        "UNSIGNED_TAIL",
        "ROLLBACK",
        "KEY_SUBSTITUTED",
        "RECEIPT_INVALID",
        "REMEDY_UNKNOWN_ENTRY",
        "CHECK_RECEIPT_INVALID",
        "UNDO_RECEIPT_INVALID",
        "PLAN_DIGEST_MISMATCH",
        "APPROVAL_TARGET_MISMATCH",
        "APPROVAL_SIGNATURE_INVALID",
        "DIRECTORY_NOT_PINNED",
        "CALL_DIGEST_MISMATCH",
        "RECEIPT_REPLAYED",
        "DECISION_UNKNOWN_TARGET",
        "APPROVER_NOT_AUTHORIZED",
        "OVERRIDE_INVALID",
        "DIRECTORY_MISSING",
        "DIRECTORY_MISMATCH",
        "TOKEN_IN_RECORD",
        "UNKNOWN_KIND",
        "BAD_BODY",
        "BAD_TIME",
        "DUPLICATE_KEY",
        "RECEIPT_MISPLACED",
        "PIN_SIGNATURE_INVALID",
        # Witnessed heads
        "WITNESS_MISSING",
        "BAD_COSIGNATURE",
        "WITNESS_AHEAD",
        "WITNESS_FORKED",
        "WITNESS_NO_HEAD",
    }


def test_the_example_in_the_run_record_doc_runs_as_printed(tmp_path: Path) -> None:
    match = re.search(r"<!-- example: verify -->\n```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match, "docs/run-record.md has no example named verify"
    namespace: dict[str, Any] = {"__name__": "run_record_doc", "tmp_path": tmp_path}

    exec(compile(match.group(1), "docs/run-record.md", "exec"), namespace)

    assert namespace["report"].ok
    assert namespace["rolled_back"].codes() == {"ROLLBACK"}
