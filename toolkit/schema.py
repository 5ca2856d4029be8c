"""Write the JSON Schema of every wire model: ``python -m hatp_journal.toolkit.schema DIR``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hatp_journal.toolkit.wire import SCHEMA_MODELS

TOKEN_DIGEST = {
    "description": "The compensation token replaced by its digest (lowercase hex SHA-256 of its UTF-8 "
    "bytes): the form a Run Record keeps, which the server's receipt signs",
    "pattern": "^[0-9a-f]{64}$",
    "title": "Compensationtokendigest",
    "type": "string",
}


def schemas() -> dict[str, dict[str, Any]]:
    """Schema file name → JSON Schema, in serialization (wire) mode."""
    written = {
        f"{name}.schema.json": model.model_json_schema(by_alias=True, mode="serialization")
        for name, model in SCHEMA_MODELS.items()
    }
    _journal_as_kept(written["journal-object.schema.json"])
    return written


def _journal_as_kept(schema: dict[str, Any]) -> None:
    """A journal object as a server sends it (``compensationToken``) or as a record keeps it and the
    receipt signs it (``compensationTokenDigest``), never both (``docs/run-record.md``)."""
    schema["properties"]["compensationTokenDigest"] = TOKEN_DIGEST
    schema["not"] = {"required": ["compensationToken", "compensationTokenDigest"]}


def render(schema: dict[str, Any]) -> str:
    """The committed text of one schema file."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(directory: Path) -> list[Path]:
    """Write every schema into ``directory``; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")):
        print(path)
