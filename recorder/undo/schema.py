"""The JSON Schema of the Reversal Plan: ``python -m hatp_journal.recorder.undo.schema [DIR]``."""

from __future__ import annotations

import sys
from pathlib import Path

from hatp_journal.recorder.changes.plan import plan_schema
from hatp_journal.toolkit.schema import render

SCHEMA_NAME = "reversal-plan.schema.json"


def write_schema(directory: Path) -> Path:
    """Write ``reversal-plan.schema.json`` into ``directory`` with the toolkit's renderer."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SCHEMA_NAME
    path.write_text(render(plan_schema()), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_schema(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")))
