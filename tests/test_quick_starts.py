"""Command lines start quickly: ``--help`` imports no MCP stack, and packages import their parts lazily."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
HEAVY = ("mcp", "fastmcp", "sqlalchemy", "playwright")

# One process runs every command's --help and says, after each, which heavy libraries are loaded
# by then (they accumulate, so the first command that loads one is the one named).
HELP_EVERY_COMMAND = """
import contextlib, importlib, io, json, sys
heavy, entries = json.loads(sys.argv[1])
loaded = {}
for script, target in entries:
    module, _, function = target.partition(":")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        getattr(importlib.import_module(module), function)(["--help"])
    loaded[script] = [name for name in heavy if name in sys.modules]
print(json.dumps(loaded))
"""


def _console_scripts() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    scripts: dict[str, str] = config["project"]["scripts"]
    return scripts


def test_no_command_loads_the_mcp_stack_or_sqlalchemy_to_print_its_help() -> None:
    scripts = _console_scripts()
    argument = json.dumps([list(HEAVY), sorted(scripts.items())])

    shown = subprocess.run(
        [sys.executable, "-c", HELP_EVERY_COMMAND, argument], capture_output=True, text=True, check=True
    )

    loaded = json.loads(shown.stdout)
    assert sorted(loaded) == sorted(scripts)
    assert {script: names for script, names in loaded.items() if names} == {}


def test_the_recorders_commands_that_read_the_record_do_not_load_the_mcp_stack() -> None:
    # show, export, verify, runs, asks, tick and review; serve and the undo commands load it themselves.
    code = (
        "import sys, hatp_journal.recorder.cli.commands; print([m for m in sys.argv[1:] if m in sys.modules])"
    )

    argv = [sys.executable, "-c", code, "mcp", "fastmcp", "starlette"]

    shown = subprocess.run(argv, capture_output=True, text=True, check=True)

    assert shown.stdout.strip() == "[]"


def _lazy_packages() -> list[Path]:
    return sorted(
        init
        for folder in ("_shared", "toolkit", "servers", "recorder", "scenarios", "conformance")
        for init in (ROOT / folder).rglob("__init__.py")
        if "lazy_exports(" in init.read_text(encoding="utf-8")
    )


def _typed_and_lazy_names(init: Path) -> tuple[dict[str, str], dict[str, str]]:
    """What the ``if TYPE_CHECKING:`` imports name, and what the lazy table names: name -> module."""
    package = "hatp_journal." + ".".join(init.parent.relative_to(ROOT).parts)
    tree = ast.parse(init.read_text(encoding="utf-8"))
    [guarded] = [node for node in tree.body if isinstance(node, ast.If)]
    typed = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom)
        module = package if node.level else ""
        module = f"{module}.{node.module}" if module and node.module else module or str(node.module)
        typed.update({alias.name: module for alias in node.names})
    [assign] = guarded.orelse
    assert isinstance(assign, ast.Assign)
    assert isinstance(assign.value, ast.Call)
    table = ast.literal_eval(assign.value.args[1])
    lazy = {name: module for module, names in table.items() for name in names}
    return typed, lazy


def test_every_lazy_package_imports_for_type_checkers_what_it_imports_on_first_use() -> None:
    packages = _lazy_packages()
    assert len(packages) >= 10  # toolkit, the servers, the recorder's parts, scenarios, conformance

    for init in packages:
        typed, lazy = _typed_and_lazy_names(init)
        assert typed == lazy, init


def test_every_name_a_lazy_package_exports_is_the_object_its_module_defines() -> None:
    for init in _lazy_packages():
        package = importlib.import_module("hatp_journal." + ".".join(init.parent.relative_to(ROOT).parts))
        _, lazy = _typed_and_lazy_names(init)
        assert sorted(package.__all__) == sorted(lazy), init
        for name, module in lazy.items():
            assert getattr(package, name) is getattr(importlib.import_module(module), name), (init, name)


def test_a_name_a_lazy_package_does_not_export_is_an_attribute_error() -> None:
    import hatp_journal.toolkit as toolkit

    with pytest.raises(AttributeError, match="NoSuchName"):
        toolkit.NoSuchName  # type: ignore[attr-defined]  # noqa: B018


def test_a_lazy_name_that_is_also_its_modules_name_is_refused() -> None:
    from hatp_journal._shared.lazy import lazy_exports

    with pytest.raises(ValueError, match="decide"):
        lazy_exports("hatp_journal.recorder.policy", {"hatp_journal.recorder.policy.decide": ["decide"]})
