"""JSON Schemas of the suite's result and attestation: `python -m hatp_journal.conformance.schema [DIR]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatp_journal.conformance.attestation import Attestation
from hatp_journal.conformance.results import SuiteResult
from hatp_journal.toolkit.schema import render
from hatp_journal.toolkit.wire import WireModel

MODELS: dict[str, type[WireModel]] = {
    "conformance-result.schema.json": SuiteResult,
    "conformance-attestation.schema.json": Attestation,
}


def schemas() -> dict[str, dict[str, Any]]:
    """File name → JSON Schema, in serialization (wire) mode."""
    return {
        name: model.model_json_schema(by_alias=True, mode="serialization") for name, model in MODELS.items()
    }


def write(directory: Path) -> list[Path]:
    """Write both schemas into ``directory`` with the toolkit's renderer."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        (directory / name).write_text(render(schema), encoding="utf-8")
        written.append(directory / name)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")):
        print(path)
