"""The published schemas (docs/schema/) accept what genuine records and servers write.

Read as an outside validator reads them (the ``jsonschema`` package): the D-881 Run Record and
every forgery whose lie is not one of shape fit ``run-record.schema.json``; every journal object a
server signed in it fits ``journal-object.schema.json`` in the form the record keeps
(``compensationTokenDigest``) and in the form a server sends (``compensationToken``), never both;
every check and undo answer fits ``undo-answer.schema.json``; every receipt names its ``alg``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "docs" / "schema"
RECORD: dict[str, Any] = json.loads((ROOT / "docs" / "examples" / "d881" / "run-record.json").read_bytes())


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


def journals() -> list[dict[str, Any]]:
    return [e["body"]["journal"] for e in RECORD["entries"] if e["kind"] == "call"]


def answers() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for entry in RECORD["entries"]:
        body = entry["body"]
        found += body.get("checks", {}).values()
        found += [body["answer"]] if "answer" in body else []
        found += [line["receipt"] for line in body.get("steps", []) if "receipt" in line]
    return found


def test_the_genuine_record_fits_the_run_record_schema() -> None:
    jsonschema.validate(RECORD, schema("run-record"))


def test_every_journal_object_a_server_signed_fits_as_the_record_keeps_it_and_as_the_server_sent_it() -> None:
    kept = journals()
    assert len(kept) == 3
    for journal in kept:
        jsonschema.validate(journal, schema("journal-object"))
        sent = {k: v for k, v in journal.items() if k != "compensationTokenDigest"}
        jsonschema.validate({**sent, "compensationToken": "ctk_" + "A" * 43}, schema("journal-object"))


def test_a_journal_object_with_both_the_token_and_its_digest_does_not_fit() -> None:
    journal = {**journals()[0], "compensationToken": "ctk_" + "A" * 43}

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(journal, schema("journal-object"))


def test_every_check_and_undo_answer_in_the_record_fits_the_undo_answer_schema() -> None:
    found = answers()
    assert len(found) == 6  # 2 checks, 2 undo answers, 2 in the Reversal Record
    for answer in found:
        jsonschema.validate(answer, schema("undo-answer"))


def test_a_receipt_without_its_alg_fits_no_schema_since_the_verifier_refuses_it() -> None:
    journal = journals()[0]
    receipt = {k: v for k, v in journal["receipt"].items() if k != "alg"}
    answer = answers()[0]

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**journal, "receipt": receipt}, schema("journal-object"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**answer, "receipt": receipt}, schema("undo-answer"))
