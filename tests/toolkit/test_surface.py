"""The toolkit's author surface: its top-level names are pinned, its old names and module paths still
import for one release with a warning that names their new place, and the project uses none of them."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import hatp_journal.toolkit as toolkit
from hatp_journal.toolkit._moved import MOVED_MODULES, MOVED_NAMES

ROOT = Path(__file__).parents[2]
FLOORS = ("_shared", "toolkit", "servers", "recorder", "scenarios", "conformance", "tests", "bench")

AUTHOR_SURFACE = [
    "DeclarationError",
    "Effect",
    "Journal",
    "ResourceState",
    "Revision",
    "SigningKey",
    "ToolFailed",
    "Tx",
    "UndoFailed",
    "Undone",
    "Versioned",
    "Write",
    "after_commit_action",
    "compensates",
    "create_store_engine",
    "irreversible",
    "previews",
    "read_only",
    "summarize",
    "undoable",
]

PUBLIC_MODULES = ["attestation", "errors", "schema", "signing", "store", "store_schema", "testing", "ui"]
PUBLIC_MODULES += ["versions", "wire"]


def test_the_toolkit_exports_exactly_the_names_a_server_author_writes_with() -> None:
    assert toolkit.__all__ == AUTHOR_SURFACE
    for name in AUTHOR_SURFACE:
        assert getattr(toolkit, name) is not None


def test_every_module_of_the_toolkit_is_a_public_theme_or_underscore_named() -> None:
    modules = sorted(path.stem for path in (ROOT / "toolkit").glob("*.py") if path.stem != "__init__")

    public = [name for name in modules if not name.startswith("_")]

    assert public == sorted(PUBLIC_MODULES)


@pytest.mark.parametrize("name", sorted(MOVED_NAMES))
def test_an_old_top_level_name_still_imports_with_a_warning_that_names_its_new_place(name: str) -> None:
    home = MOVED_NAMES[name]

    with pytest.warns(DeprecationWarning, match=rf"hatp_journal\.toolkit\.{name} moved to {home}\.{name}"):
        value = getattr(toolkit, name)

    assert value is getattr(importlib.import_module(home), name)
    assert name not in toolkit.__all__


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_path_imports_as_the_module_at_its_new_place_with_a_warning(old: str) -> None:
    new = MOVED_MODULES[old]
    importlib.import_module(new)
    sys.modules.pop(old, None)

    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new};"):
        module = importlib.import_module(old)

    assert module is sys.modules[new]
    assert module.__spec__ is not None
    assert module.__spec__.name == new  # its own spec, not the alias's
    sys.modules.pop(old, None)


def test_the_warning_points_at_the_importing_line_and_a_name_never_exported_is_an_import_error() -> None:
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "import hatp_journal.toolkit.mail\n"
        "from hatp_journal.toolkit import wire_time\n"
        "from hatp_journal.toolkit import journal\n"
        "assert journal.Journal is __import__('hatp_journal.toolkit').toolkit.Journal\n"
        "from hatp_journal.toolkit import no_such_name\n"
    )

    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert "<string>:2: DeprecationWarning: hatp_journal.toolkit.mail moved to hatp_journal._shared.mail" in (
        shown.stderr
    )
    assert "<string>:3: DeprecationWarning: hatp_journal.toolkit.wire_time moved to " in shown.stderr
    assert (
        "<string>:4: DeprecationWarning: hatp_journal.toolkit.journal moved to hatp_journal.toolkit._journal"
        in (shown.stderr)
    )
    assert "ImportError: cannot import name 'no_such_name' from 'hatp_journal.toolkit'" in shown.stderr


def test_the_toolkit_imports_without_any_warning() -> None:
    code = "import hatp_journal.toolkit as t\nfor name in t.__all__: getattr(t, name)\n"
    code += "import hatp_journal.toolkit.testing, hatp_journal.toolkit.ui, hatp_journal.toolkit.versions\n"

    shown = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)

    assert (shown.returncode, shown.stderr) == (0, "")


def _old_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in MOVED_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in MOVED_MODULES:
                found.append(node.module)
            elif node.module == "hatp_journal.toolkit":
                found += [
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name in MOVED_NAMES or f"{node.module}.{alias.name}" in MOVED_MODULES
                ]
    return found


def test_no_module_of_the_project_imports_an_old_name_or_path() -> None:
    old = {
        str(path.relative_to(ROOT)): found
        for floor in FLOORS
        for path in sorted((ROOT / floor).rglob("*.py"))
        if path != Path(__file__) and (found := _old_imports(path.read_text(encoding="utf-8")))
    }

    assert old == {}, "run /work/wt/surface-rewrite.py or import from the new places"


def test_the_check_above_finds_an_old_import() -> None:
    source = "from hatp_journal.toolkit import Journal, wire_time\nimport hatp_journal.toolkit.mail\n"

    assert _old_imports(source) == ["hatp_journal.toolkit.wire_time", "hatp_journal.toolkit.mail"]


def test_no_warning_is_given_for_a_name_the_toolkit_still_exports() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert toolkit.Journal is importlib.import_module("hatp_journal.toolkit._journal").Journal
