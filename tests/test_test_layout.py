"""Test modules are imported by their file name (pytest's default import mode): names must be unique."""

from __future__ import annotations

import ast
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


def test_no_test_module_imports_a_test_module_of_another_folder() -> None:
    # pytest puts a test module's own folder on the import path when it collects it: a test module of
    # another folder imports only if that folder was collected first. Shared helpers go to tests/support.
    folders = {path.stem: path.parent for path in TESTS.rglob("test_*.py")}
    crossing = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            crossing += [
                f"{path.relative_to(TESTS)} imports {name}"
                for name in names
                if name in folders and folders[name] != path.parent
            ]

    assert crossing == []
