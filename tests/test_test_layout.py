"""Test modules are imported by their file name (pytest's default import mode): names must be unique."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).parent


def test_every_python_module_under_tests_has_a_name_of_its_own() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name not in ("conftest.py", "__init__.py"))

    assert [name for name, count in names.items() if count > 1] == []


def test_no_test_module_puts_a_folder_on_the_import_path_by_hand() -> None:
    # Shared helpers live in tests/support (importable as ``support``), not behind sys.path edits.
    others = [path for path in TESTS.rglob("*.py") if path != Path(__file__)]
    hand_edits = [path.name for path in others if "sys.path.insert" in path.read_text()]

    assert hand_edits == []
