"""docs/server-authors.md ends in a server that passes the whole suite: its blocks, put into one file
as the page says, are started with the page's ``--db`` command line and checked."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conformance_helpers import command, failures, suite

GUIDE = Path(__file__).parents[2] / "docs" / "server-authors.md"
SERVER_BLOCKS = ["inventory", "inventory-stock", "inventory-ship", "inventory-hooks", "inventory-main"]


def block(name: str) -> str:
    match = re.search(
        rf"<!-- example: {name} -->\n```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S
    )
    assert match, f"docs/server-authors.md has no example named {name}"
    return match.group(1)


@pytest.mark.slow  # one whole suite run, about 20 s
def test_the_guides_inventory_server_passes_the_whole_suite_with_every_operation_verified(
    tmp_path: Path,
) -> None:
    server = tmp_path / "inventory.py"
    server.write_text("\n\n".join(block(name) for name in SERVER_BLOCKS), encoding="utf-8")

    result = suite(command(sys.executable, server, "--db", tmp_path / "inventory-test.db"))

    assert failures(result) == set()
    assert [outcome for outcome in result.outcomes if outcome.outcome == "skipped"] == []
    assert result.passed
    assert result.verified_operations == ["set_stock", "ship"]
