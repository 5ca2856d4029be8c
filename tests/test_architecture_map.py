"""docs/architecture.md maps every subsystem of the Recorder: a package or a top-level module left out of
its table (or a file left out of its package's row) fails here, so the map grows with the tree."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from test_floors import recorder_level  # tests/ is on the path: the floors are defined there, once

ROOT = Path(__file__).parents[1]
MAP = ROOT / "docs" / "architecture.md"
RECORDER = ROOT / "recorder"
SUMMARISED = frozenset({"policy", "registry"})
"""Packages whose row names the main files and ends with "...": only the package itself must be there."""


def map_rows(text: str) -> dict[str, str]:
    """The subsystems table: each name in a row's first cell (``gateway/``, ``config.py``) → the row."""
    section = text.split("## The Recorder's subsystems", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        for name in re.findall(r"`([^`]+)`", first_cell):
            rows[name] = line
    return rows


def recorder_units(root: Path) -> set[str]:
    """``gateway/`` for each package under recorder/, ``config.py`` for each top-level module."""
    units = set()
    for path in root.iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            units.add(f"{path.name}/")
        elif path.suffix == ".py" and path.name != "__init__.py":
            units.add(path.name)
    return units


def missing_from_map(text: str, root: Path) -> list[str]:
    rows = map_rows(text)
    missing = sorted(unit for unit in recorder_units(root) if unit not in rows)
    for unit, row in rows.items():
        package = root / unit.rstrip("/")
        if not unit.endswith("/") or unit.rstrip("/") in SUMMARISED or not package.is_dir():
            continue
        for module in sorted(package.glob("*.py")):
            if module.name != "__init__.py" and f"`{module.name}`" not in row:
                missing.append(f"{unit}{module.name}")
    return missing


def test_every_recorder_package_module_and_file_is_on_the_architecture_map() -> None:
    assert missing_from_map(MAP.read_text(encoding="utf-8"), RECORDER) == []


def test_a_new_package_left_off_the_map_is_caught(tmp_path: Path) -> None:
    (tmp_path / "gateway").mkdir()
    (tmp_path / "gateway" / "__init__.py").write_text("")
    (tmp_path / "gateway" / "core.py").write_text("")
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "__init__.py").write_text("")
    (tmp_path / "clock.py").write_text("")
    text = "## The Recorder's subsystems\n\n| subsystem | does | files |\n|---|---|---|\n"
    text += "| `gateway/` | the data plane | `core.py` |\n"

    assert missing_from_map(text, tmp_path) == ["clock.py", "ledger/"]


def test_a_file_left_out_of_its_packages_row_is_caught(tmp_path: Path) -> None:
    (tmp_path / "front").mkdir()
    for name in ("__init__.py", "stdio.py", "http.py"):
        (tmp_path / "front" / name).write_text("")
    text = "## The Recorder's subsystems\n\n| `front/` | the agent's side | `stdio.py` |\n\n## Next\n"

    assert missing_from_map(text, tmp_path) == ["front/http.py"]


def unit_name(cell_name: str) -> str:
    """``gateway/`` → ``gateway``, ``config.py`` → ``config``: a row's name as the floors test names it."""
    return cell_name.removesuffix("/").removesuffix(".py")


def rows_out_of_order(text: str) -> list[tuple[str, str]]:
    """Each pair of the table's rows (one above the next) whose upper one stands on a lower floor in
    tests/test_floors.py: the table reads top down, as the floors do."""
    found = [(name, recorder_level(unit_name(name))) for name in map_rows(text)]
    return [(above, below) for (above, high), (below, low) in itertools.pairwise(found) if high < low]


def test_the_map_lists_the_subsystems_top_down_in_the_order_of_their_floors() -> None:
    text = MAP.read_text(encoding="utf-8")

    assert len(map_rows(text)) > 10
    assert rows_out_of_order(text) == []


def test_a_row_above_the_floor_it_stands_on_is_caught() -> None:
    text = "## The Recorder's subsystems\n\n| `record/` | the record | |\n| `gateway/` | the data plane | |\n"

    assert rows_out_of_order(text) == [("record/", "gateway/")]
