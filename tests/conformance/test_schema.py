"""The committed JSON Schemas of the suite's result and attestation match the code."""

from __future__ import annotations

from pathlib import Path

from hatp_journal.conformance.schema import schemas
from hatp_journal.toolkit.schema import render

SCHEMA_DIR = Path(__file__).parents[2] / "docs" / "schema"


def test_the_result_and_attestation_schemas_are_committed_as_the_code_writes_them() -> None:
    for name, schema in schemas().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == render(schema), (
            f"docs/schema/{name} drifted from the code; run `make schema`"
        )


def test_the_attestation_schema_names_what_a_policy_checks() -> None:
    attestation = schemas()["conformance-attestation.schema.json"]

    assert {"server", "operations", "issuedAt", "suite", "receipt"} <= set(attestation["properties"])
