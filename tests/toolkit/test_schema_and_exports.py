"""The committed JSON Schemas match the code, and the public API is pinned."""

from __future__ import annotations

from pathlib import Path

import hatp_journal.toolkit as toolkit
from hatp_journal.toolkit.schema import render, schemas

SCHEMA_DIR = Path(__file__).parents[2] / "docs" / "schema"


def test_every_wire_model_has_a_committed_schema_equal_to_the_code() -> None:
    generated = schemas()

    committed = {path.name for path in SCHEMA_DIR.glob("*.schema.json")}
    assert set(generated) <= committed, "run `make schema` and commit docs/schema/"
    for name, schema in generated.items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == render(schema), (
            f"docs/schema/{name} drifted from the code; run `make schema`"
        )


def test_the_public_api_is_exactly_this() -> None:
    assert sorted(toolkit.__all__) == sorted(
        [
            "META_KEY",
            "CompensateRequest",
            "Declaration",
            "DeclarationError",
            "Effect",
            "EffectChange",
            "EffectInfo",
            "ErrorCode",
            "Invocation",
            "Journal",
            "JournalError",
            "JournalObject",
            "KeyFileError",
            "StoreError",
            "Money",
            "Override",
            "RecordReadError",
            "RecordView",
            "ResourceState",
            "Revision",
            "Sample",
            "SigningKey",
            "Summary",
            "ToolFailed",
            "Tx",
            "UndoAnswer",
            "UndoFailed",
            "UndoUnverified",
            "Undone",
            "Use",
            "VerifyKey",
            "Versioned",
            "Write",
            "after_commit_action",
            "canonical_bytes",
            "compensates",
            "content_etag",
            "create_store_engine",
            "delete_versioned",
            "field_changes",
            "format_window",
            "irreversible",
            "next_revision",
            "outside_edit_for",
            "parse_window",
            "parse_wire_time",
            "previews",
            "read_only",
            "read_record",
            "record_fingerprint",
            "restore_versioned",
            "sample_for",
            "sha256_digest",
            "summarize",
            "undoable",
            "utc_now",
            "verify_answer",
            "verify_call",
            "versioned_state",
            "wire_time",
        ]
    )
    for name in toolkit.__all__:
        assert getattr(toolkit, name) is not None


def test_the_wire_uses_camel_case_and_the_stable_error_codes() -> None:
    codes = {code.value for code in toolkit.ErrorCode}

    assert {"UNDO_CONFLICT", "UNDO_EXPIRED", "UNDO_UNVERIFIED", "UNDO_UNKNOWN_TOKEN", "UNDO_FAILED"} <= codes
    answer = schemas()["undo-answer.schema.json"]
    assert {"versionFound", "versionLeft", "tokenDigest", "sideEffects", "undoBy"} <= set(
        answer["properties"]
    )
