"""requirements.lock pins every dependency pyproject.toml names (toolkit, extras, dev) with hashes."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hatp_journal._shared.extras import EXTRA_MODULES

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
LOCK = (ROOT / "requirements.lock").read_text(encoding="utf-8")
LOCKED_EXTRAS = ("serve", "servers", "web", "browser", "postgresql", "dev")
"""The extras `make lock` locks; the others (recorder, demo, all) are made of these."""


def locked() -> dict[str, tuple[str, str]]:
    """Canonical name → (version, the lock's text for it, hashes included)."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK)
    pins = {}
    for block in blocks:
        match = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", block)
        if match:
            pins[canonicalize_name(match.group(1))] = (match.group(2), block)
    return pins


def requirements(extra: str | None) -> list[Requirement]:
    """The requirements of the toolkit (``None``) or of an extra, an extra made of extras expanded."""
    lines = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    found = []
    for requirement in map(Requirement, lines):
        if canonicalize_name(requirement.name) == PROJECT["name"]:
            found += [part for inner in sorted(requirement.extras) for part in requirements(inner)]
        else:
            found.append(requirement)
    return found


def test_every_requirement_is_locked_at_a_version_it_allows_with_its_hashes() -> None:
    pins = locked()

    for extra in (None, *LOCKED_EXTRAS):
        for requirement in requirements(extra):
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{requirement} is not in requirements.lock: run `make lock`"
            version, text = pins[name]
            assert requirement.specifier.contains(version, prereleases=True), f"{requirement} vs {version}"
            assert "--hash=sha256:" in text, name


def test_every_locked_package_carries_hashes() -> None:
    unhashed = [name for name, (_, text) in locked().items() if "--hash=sha256:" not in text]

    assert len(locked()) > 50
    assert unhashed == []


def test_the_lock_says_the_command_that_makes_it() -> None:
    assert "#    make lock\n" in LOCK


def test_each_extra_brings_the_modules_its_commands_check_for() -> None:
    providers = packages_distributions()

    for extra, modules in EXTRA_MODULES.items():
        named = {canonicalize_name(requirement.name) for requirement in requirements(extra)}
        for module in modules:
            assert {canonicalize_name(name) for name in providers[module]} & named, (extra, module)
