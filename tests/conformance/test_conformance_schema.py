"""The committed JSON Schemas of the suite's result and attestation, and the docs' example, match the code."""

from __future__ import annotations

import re
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


def test_the_hooks_shown_in_docs_conformance_are_the_crms_as_the_suite_runs_them() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "conformance.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- example: crm-hooks -->\n```python\n(.*?)```", docs, re.S)
    crm = (Path(__file__).parents[2] / "servers" / "crm" / "testing.py").read_text(encoding="utf-8")

    assert shown is not None
    assert shown.group(1) in crm
