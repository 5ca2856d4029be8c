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
    """``hatp_journal.recorder.gateway`` → ``recorder``; ``None`` for the bare package name."""
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
