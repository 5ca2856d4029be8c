"""A CRM whose check or compensate lies in one chosen way (broken/undo_that_lies.py --lie NAME)
fails exactly the undo requirement that lie breaks, with that requirement's problem code."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import anyio
import pytest
from conformance_helpers import BROKEN, command, failures, run_broken

from hatp_journal.conformance import SuiteResult, Target, run_server_suite

pytestmark = pytest.mark.slow


def run_lying(lie: str, tmp_path: Path) -> SuiteResult:
    return run_broken("undo_that_lies", tmp_path, "--lie", lie)


BOTH = ("update_deal", "charge_order")
ALL = (*BOTH, "move_amount")

UNDO_FAILS = {
    ("J-4.1", "token_unusable_after_check"),
    ("J-4.2", "compensate_not_done"),
    ("J-4.5", "compensate_not_done"),
}


@pytest.mark.parametrize(
    ("lie", "failed", "moved"),
    [  # moved: what move_amount (two deals in one call, J-4.8 besides) fails; None: as the others
        ("version_found", {("J-4.1", "wrong_version_found")}, None),
        ("check_says_conflict", {("J-4.1", "check_not_ok")}, None),
        ("check_is_error", {("J-4.1", "check_is_error")}, None),
        ("check_compensates", {("J-4.1", "check_changed_state")}, None),
        ("undo_fails", UNDO_FAILS, {*UNDO_FAILS, ("J-4.8", "compensate_not_done")}),
        # An undo that changes nothing: the toolkit reads each of the two deals back and says failed.
        ("undo_does_nothing", {("J-4.2", "not_restored")}, {*UNDO_FAILS, ("J-4.8", "compensate_not_done")}),
        ("version_left", {("J-4.2", "wrong_version_left")}, None),
        ("override_conflicts", {("J-4.3", "compensated_over_change")}, {
            ("J-4.3", "wrong_code"),
            ("J-4.8", "missed_conflict"),
        }),
        ("edit_keeps_version", {("J-4.3", "edit_not_versioned")}, {
            ("J-4.3", "edit_not_versioned"),
            ("J-4.8", "missed_conflict"),
        }),
        ("compensate_ignores_window", {("J-4.4", "compensated_after_window")}, None),
        ("refusal_code", {("J-4.3", "wrong_code"), ("J-4.4", "wrong_code")}, {
            ("J-4.3", "wrong_code"),
            ("J-4.4", "wrong_code"),
            ("J-4.8", "missed_conflict"),
        }),
        ("edit_on_refusal", {
            ("J-4.3", "conflict_changed_state"),
            ("J-4.4", "expired_undo_changed_state"),
        }, {
            ("J-4.3", "conflict_changed_state"),
            ("J-4.4", "expired_undo_changed_state"),
            ("J-4.8", "conflict_changed_state"),
        }),
        ("edit_on_repeat", {("J-4.5", "repeat_changed_state")}, None),
        ("check_forgets_done", {("J-4.5", "check_not_done")}, None),
    ],
)  # fmt: skip
def test_an_undo_that_lies_in_one_way_fails_the_requirement_it_breaks_for_each_undoable_operation(
    tmp_path: Path, lie: str, failed: set[tuple[str, str]], moved: set[tuple[str, str]] | None
) -> None:
    result = run_lying(lie, tmp_path)

    assert failures(result) == {
        *((req, op, problem) for req, problem in failed for op in BOTH),
        *((req, "move_amount", problem) for req, problem in (failed if moved is None else moved)),
    }
    assert result.verified_operations == ["export_report"]


@pytest.mark.parametrize(
    ("lie", "problem"),
    [("unknown_token_check", "check_not_unknown"), ("unknown_token_compensate", "compensate_not_refused")],
)
def test_a_server_that_does_not_refuse_an_unknown_token_fails_j_4_6(
    tmp_path: Path, lie: str, problem: str
) -> None:
    result = run_lying(lie, tmp_path)

    assert failures(result) == {("J-4.6", None, problem)}
    assert result.verified_operations == []


def test_undo_answers_signed_by_an_unpublished_key_fail_every_check_that_reads_one(tmp_path: Path) -> None:
    result = run_lying("stranger_signs", tmp_path)

    undo_checks = {(f"J-4.{n}", op, "answer_not_signed") for n in range(1, 6) for op in ALL}
    every_resource = ("J-4.8", "move_amount", "answer_not_signed")
    assert failures(result) == {*undo_checks, every_resource, ("J-4.6", None, "answer_not_signed")}


@pytest.mark.parametrize(
    ("lie", "problem"), [("check_without_answer", "no_answer"), ("check_garbled", "invalid_answer")]
)
def test_a_check_that_answers_no_undo_answer_fails_every_check_that_reads_one(
    tmp_path: Path, lie: str, problem: str
) -> None:
    result = run_lying(lie, tmp_path)

    reading_a_check = {(req, op, problem) for req in ("J-4.1", "J-4.3", "J-4.4", "J-4.5") for op in ALL}
    every_resource = ("J-4.8", "move_amount", problem)
    assert failures(result) == {*reading_a_check, every_resource, ("J-4.6", None, problem)}


def test_a_check_that_takes_longer_than_its_limit_fails_as_timed_out_and_the_suite_goes_on(
    tmp_path: Path,
) -> None:
    script = BROKEN / "undo_that_lies.py"
    hanging = command(sys.executable, script, "--db", tmp_path / "crm.db", "--lie", "hang_on_unknown_token")

    result = anyio.run(partial(run_server_suite, Target(hanging), check_timeout=5.0))

    assert failures(result) == {("J-4.6", None, "timed_out")}
    assert result.verified_operations == []
