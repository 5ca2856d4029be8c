"""The committed JSON Schemas match the code."""

from __future__ import annotations

from pathlib import Path

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


# The toolkit's public names are pinned in tests/toolkit/test_surface.py.
