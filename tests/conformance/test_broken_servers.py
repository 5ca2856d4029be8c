"""Deliberately broken variants of the CRM each fail the suite with the right requirement id, and
only those of their operations stay unverified."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conformance_helpers import BROKEN, command, failures, suite

from hatp_journal.conformance import SuiteResult


def run_broken(name: str, tmp_path: Path) -> SuiteResult:
    return suite(command(sys.executable, BROKEN / f"{name}.py", "--db", tmp_path / "crm.db"))


@pytest.mark.parametrize(
    ("variant", "requirement", "problem"),
    [
        ("no_version_check", "J-4.3", "check_missed_conflict"),
        ("no_expiry", "J-4.4", "check_missed_expiry"),
        ("compensate_not_idempotent", "J-4.5", "repeat_differs"),
    ],
)
def test_a_server_whose_undo_is_broken_fails_exactly_that_requirement_for_each_undoable_operation(
    tmp_path: Path, variant: str, requirement: str, problem: str
) -> None:
    result = run_broken(variant, tmp_path)

    assert failures(result) == {(requirement, "update_deal", problem), (requirement, "charge_order", problem)}
    assert not result.passed
    assert result.verified_operations == ["export_report"]


def test_a_summary_taken_from_the_agents_arguments_fails_j_3_3_for_that_operation_only(
    tmp_path: Path,
) -> None:
    result = run_broken("summary_from_arguments", tmp_path)

    assert failures(result) == {("J-3.3", "update_deal", "summary_misses_stored_change")}
    assert result.verified_operations == ["charge_order", "export_report"]


def test_sloppy_declarations_fail_the_declaration_hint_and_remedy_requirements(tmp_path: Path) -> None:
    result = run_broken("sloppy_declarations", tmp_path)

    assert failures(result) == {
        ("J-2.1", "ping", "no_declaration"),
        ("J-2.2", "peek", "read_only_hint_mismatch"),
        ("J-3.4", "notify", "no_remedy"),
    }
    assert result.verified_operations == ["update_deal"]
