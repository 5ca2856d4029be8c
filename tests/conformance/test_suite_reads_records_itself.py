"""The suite reads Run Records with its own models, held to the published schema (docs/schema/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from hatp_journal.conformance.run_record import RECORD_FORMAT, RecordEntry, RunInfo, RunRecord

PUBLISHED = json.loads(
    (Path(__file__).parents[2] / "docs" / "schema" / "run-record.schema.json").read_text(encoding="utf-8")
)


def published(definition: str) -> dict[str, Any]:
    """A definition of the published schema: the record itself, or one of its ``$defs``."""
    return PUBLISHED if definition == "RunRecordFile" else PUBLISHED["$defs"][definition]


@pytest.mark.parametrize(
    ("model", "definition"), [(RunRecord, "RunRecordFile"), (RunInfo, "Run"), (RecordEntry, "Entry")]
)
def test_every_field_the_suite_reads_is_published_alike(model: type[BaseModel], definition: str) -> None:
    ours = model.model_json_schema(by_alias=True)
    theirs = published(definition)

    assert set(ours["properties"]) <= set(theirs["properties"])
    assert set(ours.get("required", [])) <= set(theirs["required"])
    for name, field in ours["properties"].items():
        assert field.get("type") == theirs["properties"][name].get("type"), name


def test_the_suite_reads_the_published_format() -> None:
    assert PUBLISHED["properties"]["format"]["const"] == RECORD_FORMAT


def test_a_record_of_another_format_is_not_read() -> None:
    record = {"format": "hatp-run-record/1", "run": {"id": "run_1"}, "entries": []}

    with pytest.raises(ValidationError):
        RunRecord.model_validate(record)


def test_fields_the_suite_does_not_read_are_left_to_the_verifier() -> None:
    entry = {
        "id": "e1",
        "run": "run_1",
        "seq": 1,
        "time": "2026-01-01T00:00:00Z",
        "kind": "call",
        "body": {"tool": "note"},
        "prevHash": "sha256:0",
        "hash": "sha256:1",
    }
    record = {"run": {"id": "run_1", "agent": "a"}, "entries": [entry], "checkpoints": [], "recorderKey": {}}

    read = RunRecord.model_validate(record)

    assert read.entries[0].prev_hash == "sha256:0"
    assert read.run.id == "run_1"
