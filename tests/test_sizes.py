"""Small files, short functions: no module of a package floor over 500 lines, no function over 80 lines
unless its docstring says why (a sentence with "lines": what keeps it whole)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FLOORS = ("_shared", "toolkit", "servers", "recorder", "scenarios", "conformance")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def too_long(source: str) -> list[str]:
    """What in ``source`` breaks the limits: the file's length, each long function without a reason."""
    problems = []
    lines = len(source.splitlines())
    if lines > MAX_FILE_LINES:
        problems.append(f"{lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            said = ast.get_docstring(node) or ""
            if length > MAX_FUNCTION_LINES and "lines" not in said:
                problems.append(f"{node.name}: {length} lines")
    return problems


def floor_files() -> list[str]:
    return sorted(str(path.relative_to(ROOT)) for floor in FLOORS for path in (ROOT / floor).rglob("*.py"))


def test_no_file_or_function_of_a_package_floor_is_too_long() -> None:
    found = {
        name: problems
        for name in floor_files()
        for problems in [too_long((ROOT / name).read_text(encoding="utf-8"))]
        if problems
    }

    assert found == {}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\n" * 501, ["501 lines"]),
        ("def f():\n" + "    x = 1\n" * 80, ["f: 81 lines"]),
        ("@cache\nasync def f():\n" + "    x = 1\n" * 79, ["f: 81 lines"]),
        ('def f():\n    """Kept whole: 90 lines of one table."""\n' + "    x = 1\n" * 88, []),
        ("x = 1\n" * 500, []),
        ("def f():\n" + "    x = 1\n" * 79, []),
    ],
)
def test_the_limits_are_read_from_the_source(source: str, expected: list[str]) -> None:
    assert too_long(source) == expected
