"""The house has one-way floors: a package imports only from the floors below it.

    scenarios            (the stories: may use everything)
    conformance          (the neutral suite: toolkit only; it reads servers and Recorders through the
                          protocol, and parses Run Records itself)
    servers, recorder    (side by side: neither imports the other)
    toolkit              (what server authors import)
    _shared              (the ground: code the floors share, not for authors; imports no other floor)

as docs/architecture.md draws them. The graph is read from the source with ``ast``, every module and
every import in it: at the top, inside functions (lazy imports), under ``TYPE_CHECKING``, relative
ones, and module names handed to ``importlib.import_module`` or to the packages' ``lazy_exports``.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGE = "hatp_journal"

ALLOWED: dict[str, frozenset[str]] = {
    "_shared": frozenset(),
    "toolkit": frozenset({"_shared"}),
    "servers": frozenset({"toolkit", "_shared"}),
    "recorder": frozenset({"toolkit", "_shared"}),
    "conformance": frozenset({"toolkit", "_shared"}),
    "scenarios": frozenset({"_shared", "toolkit", "servers", "recorder", "conformance"}),
}

# None today: mail delivery and crash points moved down to _shared.
KNOWN_EXCEPTIONS: frozenset[tuple[str, str]] = frozenset()

DYNAMIC_IMPORTERS = frozenset({"import_module", "__import__", "lazy_exports"})
"""Calls whose string arguments name modules that get imported."""


def module_name(path: Path, root: Path) -> str:
    """``recorder/policy/rules.py`` → ``hatp_journal.recorder.policy.rules`` (a package: its ``__init__``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def imported_modules(source: str, importer: str, is_package: bool) -> set[str]:
    """Every module of the project that ``source`` (module ``importer``) imports, wherever it does."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, importer, is_package)
            # `from hatp_journal import recorder` imports the floor itself, so name both.
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _called_name(node.func) in DYNAMIC_IMPORTERS:
            found.update(
                const.value
                for arg in [*node.args, *(keyword.value for keyword in node.keywords)]
                for const in ast.walk(arg)
                if isinstance(const, ast.Constant) and isinstance(const.value, str)
            )
    return {name for name in found if name.split(".")[0] == PACKAGE}


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def floor_of(module: str) -> str | None:
    """``hatp_journal.recorder.gateway.core`` → ``recorder``; ``None`` for the bare package name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the project's modules it imports, over every ``.py`` file of every floor."""
    graph = {}
    for floor in ALLOWED:
        for path in sorted((root / floor).rglob("*.py")):
            name = module_name(path, root)
            graph[name] = imported_modules(
                path.read_text(encoding="utf-8"), name, is_package=path.name == "__init__.py"
            )
    return graph


@cache
def project_graph() -> dict[str, set[str]]:
    """The project's own graph, read once for all the tests here."""
    return import_graph(ROOT)


def wrong_way_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Each (importer, imported) pair that goes up or sideways."""
    wrong = set()
    for importer, imported in graph.items():
        home = floor_of(importer)
        assert home in ALLOWED, f"{importer} is on no floor"
        for target in imported:
            floor = floor_of(target)
            if floor is not None and floor != home and floor not in ALLOWED[home]:
                wrong.add((importer, target))
    return wrong


def _excepted(pair: tuple[str, str]) -> bool:
    """Whether a known exception covers ``pair`` (its target is the module or a name in it)."""
    importer, target = pair
    return any(
        importer == known_importer and (target == module or target.startswith(module + "."))
        for known_importer, module in KNOWN_EXCEPTIONS
    )


def test_no_module_imports_from_a_floor_above_or_beside_it() -> None:
    wrong = wrong_way_imports(project_graph())

    unexpected = sorted(pair for pair in wrong if not _excepted(pair))
    assert unexpected == [], "move the shared code down a floor (to the toolkit) instead"


def test_every_known_exception_still_exists_so_none_outlives_its_fix() -> None:
    wrong = wrong_way_imports(project_graph())

    assert sorted(KNOWN_EXCEPTIONS - wrong) == []


def test_conformance_imports_nothing_from_the_recorder() -> None:
    graph = project_graph()

    from_recorder = sorted(
        (importer, target)
        for importer, targets in graph.items()
        if floor_of(importer) == "conformance"
        for target in targets
        if floor_of(target) == "recorder"
    )
    assert from_recorder == []


def test_the_graph_sees_every_floor_and_the_imports_between_them() -> None:
    graph = project_graph()

    assert {floor_of(module) for module in graph} == set(ALLOWED)
    assert "hatp_journal.toolkit.wire" in graph["hatp_journal.recorder.record.models"]
    assert "hatp_journal._shared.canonical" in graph["hatp_journal.toolkit.wire"]


@pytest.mark.parametrize(
    ("floor", "source"),
    [
        ("toolkit", "from hatp_journal.servers.smtp import send_message\n"),
        ("_shared", "from hatp_journal.toolkit.wire import Declaration\n"),
        ("_shared", "def later():\n    import hatp_journal.recorder.gateway\n"),
        ("toolkit", "def later():\n    import hatp_journal.recorder.gateway\n"),
        ("servers", "from hatp_journal import recorder\n"),
        ("recorder", "from hatp_journal.servers import smtp\n"),
        ("recorder", "if TYPE_CHECKING:\n    from hatp_journal.conformance.results import SuiteResult\n"),
        ("conformance", "def read():\n    from hatp_journal.recorder.record import RunStore\n"),
        ("conformance", "importlib.import_module('hatp_journal.recorder.record')\n"),
        ("conformance", "from hatp_journal.servers.crm import server\n"),
        ("servers", "lazy_exports(__name__, {'hatp_journal.scenarios.cli': ['main']})\n"),
    ],
)
def test_a_module_that_imports_upward_or_sideways_is_caught(tmp_path: Path, floor: str, source: str) -> None:
    (tmp_path / floor).mkdir()
    (tmp_path / floor / "intruder.py").write_text(source, encoding="utf-8")
    for other in ALLOWED:
        (tmp_path / other).mkdir(exist_ok=True)

    wrong = wrong_way_imports(import_graph(tmp_path))

    assert {importer for importer, _ in wrong} == {f"hatp_journal.{floor}.intruder"}


def test_relative_imports_are_read_as_the_modules_they_name() -> None:
    source = "from ..record import RunStore\nfrom . import rules\n"

    imported = imported_modules(source, "hatp_journal.recorder.policy.load", is_package=False)
    from_init = imported_modules("from .rules import decide\n", "hatp_journal.recorder.policy", True)

    assert imported == {
        "hatp_journal.recorder.record",
        "hatp_journal.recorder.record.RunStore",
        "hatp_journal.recorder.policy",
        "hatp_journal.recorder.policy.rules",
    }
    assert from_init == {"hatp_journal.recorder.policy.rules", "hatp_journal.recorder.policy.rules.decide"}


def test_downward_imports_are_allowed(tmp_path: Path) -> None:
    for floor in ALLOWED:
        (tmp_path / floor).mkdir()
    (tmp_path / "scenarios" / "story.py").write_text(
        "from hatp_journal.recorder.record import RunStore\nfrom hatp_journal.conformance import attest\n",
        encoding="utf-8",
    )
    (tmp_path / "recorder" / "gateway.py").write_text(
        "from hatp_journal.toolkit import wire\n", encoding="utf-8"
    )

    assert wrong_way_imports(import_graph(tmp_path)) == set()


# The Recorder's inner floors, bottom up: a subsystem imports only from the floors below it (and
# itself). docs/architecture.md ("The Recorder's subsystems") draws the same order.
RECORDER_FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"file_places"}),  # where in a file a person wrote each problem is (line, column)
    frozenset({"config", "tracing"}),  # the host's configuration file; spans
    frozenset({"directory"}),  # the organisation's people and keys
    frozenset({"policy", "registry"}),  # the autonomy policy (whose overrides name people); the registry
    frozenset({"record"}),  # the Run Record: store, chain, verify, export, pinned key files
    frozenset({"witness"}),  # the witness server that cosigns heads, and the sender of heads to it
    frozenset({"changes"}),  # a run's changes as undo reads them: steps, links, host undo, plan shape
    frozenset({"intake"}),  # a tool server's answer taken in: journal objects, tokens, pins, errors
    frozenset({"runs"}),  # runs, run keys, asks, waiting, reminders, notices
    frozenset({"undo"}),  # plans, approval, compensation, host-declared undo
    frozenset({"gateway"}),  # the data plane: decide, call the tool server, record
    frozenset({"web"}),  # the approvers' pages
    frozenset({"front"}),  # the agent's side: stdio and HTTP
    frozenset({"cli", "__init__"}),  # hatp-recorder's commands
    frozenset({"testing"}),  # the helpers tests import: a whole Recorder, an organisation, hostile lines
)

# Imports against the floors above, each still to be moved to where both sides can import it. The
# test below fails when one is gone, so that the list only shrinks.
RECORDER_KNOWN_EXCEPTIONS: frozenset[tuple[str, str]] = frozenset(
    {
        # undo/servers.py connects to tool servers with gateway/downstream.py's Downstream (what both
        # take a server's answer in with is below, in intake/); downstream.py relays logs and
        # progress through gateway/passthrough.py, which stays in the gateway (edited on another
        # branch). Moving the tool-calling client below undo/ needs that relay moved with it.
        ("undo", "gateway"),
    }
)


def recorder_unit(module: str) -> str | None:
    """``hatp_journal.recorder.gateway.core`` → ``gateway``; ``config`` for ``recorder/config.py``."""
    parts = module.split(".")
    if parts[:2] != [PACKAGE, "recorder"]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def recorder_level(unit: str) -> int:
    for level, units in enumerate(RECORDER_FLOORS):
        if unit in units:
            return level
    raise AssertionError(f"recorder/{unit} is on none of the recorder's floors: add it to RECORDER_FLOORS")


def recorder_wrong_way(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Each (importing subsystem, imported subsystem) of the Recorder that goes up or sideways."""
    wrong = set()
    for importer, imported in graph.items():
        home = recorder_unit(importer)
        if home is None:
            continue
        for target in imported:
            unit = recorder_unit(target)
            if unit is None or unit in {home, "__init__"}:
                continue
            if recorder_level(unit) >= recorder_level(home):
                wrong.add((home, unit))
    return wrong


def test_the_recorders_subsystems_import_only_from_the_floors_below() -> None:
    wrong = recorder_wrong_way(project_graph())

    assert sorted(wrong - RECORDER_KNOWN_EXCEPTIONS) == []


def test_every_known_recorder_exception_still_exists() -> None:
    assert sorted(RECORDER_KNOWN_EXCEPTIONS - recorder_wrong_way(project_graph())) == []


def test_every_recorder_package_and_top_module_is_on_a_floor() -> None:
    code = {
        path.name if path.is_dir() else path.stem
        for path in (ROOT / "recorder").iterdir()
        if (path.is_dir() and (path / "__init__.py").exists()) or path.suffix == ".py"
    }
    assert {"gateway", "front", "config"} <= code
    for unit in code:
        recorder_level(unit)


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("gateway/intruder.py", "from hatp_journal.recorder.front.stdio import serve_stdio\n"),
        ("record/intruder.py", "def later():\n    from hatp_journal.recorder.gateway.core import Recorder\n"),
        ("runs/intruder.py", "from hatp_journal.recorder.gateway import intake\n"),
        ("policy/intruder.py", "if TYPE_CHECKING:\n    from hatp_journal.recorder.record import RunStore\n"),
        ("web/intruder.py", "from hatp_journal.recorder.front import http\n"),
        ("config.py", "from hatp_journal.recorder.policy import Policy\n"),
    ],
)
def test_a_recorder_module_importing_up_or_sideways_is_caught(
    tmp_path: Path, importer: str, source: str
) -> None:
    for floor in ALLOWED:
        (tmp_path / floor).mkdir()
    target = tmp_path / "recorder" / importer
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")

    wrong = recorder_wrong_way(import_graph(tmp_path))

    assert len(wrong) == 1
    assert wrong <= recorder_wrong_way(import_graph(tmp_path)) - RECORDER_KNOWN_EXCEPTIONS


def test_a_recorder_module_importing_down_is_allowed(tmp_path: Path) -> None:
    for floor in ALLOWED:
        (tmp_path / floor).mkdir()
    (tmp_path / "recorder" / "front").mkdir()
    (tmp_path / "recorder" / "front" / "stdio.py").write_text(
        "from hatp_journal.recorder.gateway.core import Recorder\nfrom hatp_journal.recorder import config\n",
        encoding="utf-8",
    )

    assert recorder_wrong_way(import_graph(tmp_path)) == set()


# No import inside a function to dodge a cycle: the shared piece moves down a floor instead. An import
# of the project's code inside a function of the Recorder stays only with its reason beside it, in a
# `# lazy:` comment (start-up speed, an optional extra), on the import or on the lines just above it.
LAZY_MARK = "# lazy:"


def _statement_lists(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every list of statements inside a function (its body, branches, handlers, loops, withs)."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                statements = getattr(node, field, None)
                if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                    found.append(statements)
            if isinstance(node, ast.Try | ast.TryStar):
                found += [handler.body for handler in node.handlers]
    return found


def _imports_project(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == PACKAGE
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in node.names)


def unexplained_lazy_imports(source: str) -> list[int]:
    """The lines of function-level imports of the project's code with no ``# lazy:`` reason.

    A run of imports one after the other shares one reason: on any of their lines, on the line just
    above the first (a comment, or the end of the ``if`` or ``def`` line that leads to them), or
    in the comment lines right above that."""
    lines = source.splitlines()
    missing = set()
    for statements in _statement_lists(ast.parse(source)):
        run: list[ast.stmt] = []
        for statement in [*statements, None]:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                run.append(statement)
                continue
            if run and any(_imports_project(node) for node in run) and not _explained(run, lines):
                missing.update(node.lineno for node in run if _imports_project(node))
            run = []
    return sorted(missing)


def _explained(run: list[ast.stmt], lines: list[str]) -> bool:
    own = lines[run[0].lineno - 1 : (run[-1].end_lineno or run[-1].lineno)]
    if any(LAZY_MARK in line for line in own):
        return True
    above = run[0].lineno - 2
    while above >= 0 and lines[above].strip().startswith("#"):
        if LAZY_MARK in lines[above]:
            return True
        above -= 1
    return above >= 0 and LAZY_MARK in lines[above]


def test_every_import_inside_a_recorder_function_says_why_it_is_lazy() -> None:
    unexplained = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "recorder").rglob("*.py"))
        for line in unexplained_lazy_imports(path.read_text(encoding="utf-8"))
    ]

    assert unexplained == [], "move the shared piece down a floor, or say `# lazy: why` beside the import"


@pytest.mark.parametrize(
    "source",
    [
        "def later():\n    from hatp_journal.recorder.gateway.core import Recorder\n",
        "def later():\n    x = 1  # lazy: not beside the import\n\n    import hatp_journal.recorder.web\n",
        "async def later():\n    if x:\n        from ..record import RunStore  # start-up speed\n",
        "def later():\n    try:\n        pass\n    except E:\n        from . import cli\n",
        "class C:\n    def later(self):\n        import json\n        from hatp_journal import web\n",
    ],
)
def test_a_function_level_import_without_its_reason_is_caught(source: str) -> None:
    assert unexplained_lazy_imports(source) != []


@pytest.mark.parametrize(
    "source",
    [
        "from hatp_journal.recorder.gateway.core import Recorder\n",
        "if TYPE_CHECKING:\n    from hatp_journal.recorder.gateway.core import Recorder\n",
        "def later():\n    import uvicorn\n",
        "def later():\n    from hatp_journal.recorder import web  # lazy: only for web\n",
        "def later():\n    if web:  # lazy: only for web\n        from hatp_journal.recorder import web\n",
        "def later():\n    # lazy: the MCP stack\n    from hatp_journal import a\n    from . import b\n",
    ],
)
def test_a_function_level_import_with_its_reason_or_outside_the_project_passes(source: str) -> None:
    assert unexplained_lazy_imports(source) == []
