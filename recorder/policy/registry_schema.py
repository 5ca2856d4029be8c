"""The JSON Schema of a host registry file: ``python -m hatp_journal.recorder.policy.registry_schema``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatp_journal.recorder.policy.registry import RegistryFile
from hatp_journal.toolkit.schema import render

SCHEMA_NAME = "host-registry.schema.json"


def registry_schema() -> dict[str, Any]:
    """The schema of what a registry file may say (validation mode: it is read, not sent).

    Rules the schema can't state are checked when the file is loaded: a rule names one of the
    tool's ``arguments`` and gives exactly one test; only R4 may be a disclosure.
    """
    return RegistryFile.model_json_schema(by_alias=True, mode="validation")


def write_schema(directory: Path) -> Path:
    """Write ``host-registry.schema.json`` into ``directory`` with the toolkit's renderer."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SCHEMA_NAME
    path.write_text(render(registry_schema()), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_schema(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")))
