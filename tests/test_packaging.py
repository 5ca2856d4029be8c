"""Every package folder is declared in pyproject, so none goes missing from the wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]
FOLDERS = ("_shared", "toolkit", "servers", "recorder", "scenarios", "conformance")


def test_every_folder_with_an_init_is_a_declared_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = set(config["tool"]["setuptools"]["packages"])

    found = {
        "hatp_journal." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }

    assert found - declared == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert declared - found == set(), "these declared packages have no __init__.py"
