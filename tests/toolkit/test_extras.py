"""A command that reaches a part of a missing extra says which extra to install (MISSING_EXTRA, exit 2)."""

from __future__ import annotations

import importlib

import pytest

from hatp_journal._shared import extras
from hatp_journal._shared.extras import MISSING_EXTRA, install_hint, needs_extras, require_extra

ABSENT = "hatp_journal_part_that_is_not_installed"


def test_a_command_that_imports_a_missing_extras_module_exits_2_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(extras.EXTRA_OF_MODULE, ABSENT, "servers")

    @needs_extras
    def command() -> int:
        importlib.import_module(ABSENT)
        return 0

    assert command() == 2
    error = capsys.readouterr().err
    assert error.split(": ")[1] == MISSING_EXTRA
    assert install_hint("servers") in error


def test_a_missing_module_that_no_extra_brings_is_an_error_as_it_is() -> None:
    @needs_extras
    def command() -> int:
        importlib.import_module(ABSENT)
        return 0

    with pytest.raises(ModuleNotFoundError):
        command()


def test_an_installed_module_that_fails_to_import_is_not_taken_for_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(extras.EXTRA_OF_MODULE, "json", "servers")

    @needs_extras
    def command() -> int:
        raise ImportError("cannot import name 'nothing' from 'json'", name="json")

    with pytest.raises(ImportError):
        command()


def test_a_command_that_needs_its_extra_from_the_start_stops_before_it_starts_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(extras.EXTRA_MODULES, "demo", ("icalendar", ABSENT))
    started = []

    @needs_extras
    def command() -> int:
        require_extra("demo")
        started.append("servers")
        return 0

    assert (command(), started) == (2, [])
    assert install_hint("demo") in capsys.readouterr().err


def test_a_command_whose_extras_are_installed_runs_as_it_is() -> None:
    @needs_extras
    def command() -> int:
        require_extra("demo")
        return 7

    assert command() == 7
