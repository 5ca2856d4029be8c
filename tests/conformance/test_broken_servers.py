"""Deliberately broken variants of the CRM each fail the suite with the right requirement id, and
only those of their operations stay unverified."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import anyio
import pytest
from conformance_helpers import BROKEN, command, failures, suite

from hatp_journal.conformance import SuiteResult, Target, run_server_suite


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


def test_results_that_disagree_with_their_declaration_fail_j_3_1_and_j_3_4_even_when_signed(
    tmp_path: Path,
) -> None:
    result = run_broken("results_that_disagree", tmp_path)

    assert failures(result) == {
        ("J-3.1", "update_deal", "terms_mismatch"),
        ("J-3.1", "charge_order", "undo_by_mismatch"),
        ("J-3.4", "export_report", "token_on_none"),
    }
    assert result.verified_operations == []


def test_each_declaration_that_contradicts_itself_fails_j_2_1_or_j_2_2_with_its_own_problem(
    tmp_path: Path,
) -> None:
    result = run_broken("declarations_that_contradict_themselves", tmp_path)

    assert failures(result) == {
        ("J-2.1", "garbled", "invalid_declaration"),
        ("J-2.1", "vague", "no_undo_kind"),
        ("J-2.1", "read_and_undo", "read_with_compensate"),
        ("J-2.1", "windowless", "no_window"),
        ("J-2.1", "window_soon", "bad_window"),
        ("J-2.1", "window_zero", "bad_window"),
        ("J-2.1", "windows_apart", "windows_disagree"),
        ("J-2.1", "reasonless", "no_reason"),
        ("J-2.2", "undoable_but_destructive", "destructive_hint_mismatch"),
        ("J-2.2", "closed_world_disclosure", "open_world_hint_mismatch"),
    }
    assert result.verified_operations == ["update_deal", "charge_order", "export_report"]


def test_a_result_naming_another_server_or_kind_or_no_reason_fails_for_that_part(tmp_path: Path) -> None:
    result = run_broken("results_with_wrong_parts", tmp_path)

    assert failures(result) == {
        ("J-3.1", "update_deal", "server_mismatch"),
        ("J-3.1", "charge_order", "kind_mismatch"),
        ("J-3.4", "export_report", "no_reason"),
    }


def test_receipts_by_an_unpublished_key_over_other_arguments_or_missing_fail(tmp_path: Path) -> None:
    result = run_broken("results_signed_wrong", tmp_path)

    assert failures(result) == {
        ("J-3.2", "update_deal", "unknown_kid"),
        ("J-3.2", "charge_order", "receipt_invalid"),
        ("J-3.1", "export_report", "no_receipt"),
        ("J-3.2", "export_report", "no_receipt"),
    }


def run_lying(lie: str, tmp_path: Path) -> SuiteResult:
    script = BROKEN / "undo_that_lies.py"
    return suite(command(sys.executable, script, "--db", tmp_path / "crm.db", "--lie", lie))


BOTH = ("update_deal", "charge_order")


@pytest.mark.parametrize(
    ("lie", "failed"),
    [
        ("version_found", {("J-4.1", "wrong_version_found")}),
        ("check_says_conflict", {("J-4.1", "check_not_ok")}),
        ("check_is_error", {("J-4.1", "check_is_error")}),
        ("check_compensates", {("J-4.1", "check_changed_state")}),
        ("undo_fails", {
            ("J-4.1", "token_unusable_after_check"),
            ("J-4.2", "compensate_not_done"),
            ("J-4.5", "compensate_not_done"),
        }),
        ("undo_does_nothing", {("J-4.2", "not_restored")}),
        ("version_left", {("J-4.2", "wrong_version_left")}),
        ("override_conflicts", {("J-4.3", "compensated_over_change")}),
        ("edit_keeps_version", {("J-4.3", "edit_not_versioned")}),
        ("compensate_ignores_window", {("J-4.4", "compensated_after_window")}),
        ("refusal_code", {("J-4.3", "wrong_code"), ("J-4.4", "wrong_code")}),
        ("edit_on_refusal", {("J-4.3", "conflict_changed_state"), ("J-4.4", "expired_undo_changed_state")}),
        ("edit_on_repeat", {("J-4.5", "repeat_changed_state")}),
        ("check_forgets_done", {("J-4.5", "check_not_done")}),
    ],
)  # fmt: skip
def test_an_undo_that_lies_in_one_way_fails_the_requirement_it_breaks_for_each_undoable_operation(
    tmp_path: Path, lie: str, failed: set[tuple[str, str]]
) -> None:
    result = run_lying(lie, tmp_path)

    assert failures(result) == {(req, op, problem) for req, problem in failed for op in BOTH}
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

    undo_checks = {(f"J-4.{n}", op, "answer_not_signed") for n in range(1, 6) for op in BOTH}
    assert failures(result) == {*undo_checks, ("J-4.6", None, "answer_not_signed")}


@pytest.mark.parametrize(
    ("lie", "problem"), [("check_without_answer", "no_answer"), ("check_garbled", "invalid_answer")]
)
def test_a_check_that_answers_no_undo_answer_fails_every_check_that_reads_one(
    tmp_path: Path, lie: str, problem: str
) -> None:
    result = run_lying(lie, tmp_path)

    reading_a_check = {(req, op, problem) for req in ("J-4.1", "J-4.3", "J-4.4", "J-4.5") for op in BOTH}
    assert failures(result) == {*reading_a_check, ("J-4.6", None, problem)}


UNDO = ("J-4.1", "J-4.2", "J-4.3", "J-4.4", "J-4.5")
RESULTS = ("J-3.1", "J-3.2", "J-3.3")


@pytest.mark.parametrize(
    ("part", "failed"),
    [
        ("token", {("J-3.1", "no_token")} | {(req, "no_token") for req in UNDO}),
        ("version", {("J-3.3", "version_not_stored")} | {(req, "no_version") for req in ("J-3.1", *UNDO)}),
        ("effect", {("J-3.1", "no_effect"), ("J-3.3", "no_summary")} | {(req, "no_effect") for req in UNDO}),
        ("fields", {("J-3.3", "effect_not_stored")}),
        ("undo", {("J-3.1", "no_undo"), ("J-4.4", "no_undo")}),
        ("undo_by", {("J-3.1", "no_undo_by"), ("J-4.4", "no_undo_by")}),
        ("undo_by_not_utc", {("J-3.1", "bad_undo_by"), ("J-4.4", "bad_undo_by")}),
        ("journal", {(req, "no_journal_object") for req in (*RESULTS, *UNDO)}),
        ("garbled", {(req, "invalid_journal_object") for req in (*RESULTS, *UNDO)}),
        ("error", {(req, "call_failed") for req in (*RESULTS, *UNDO)}),
    ],
)  # fmt: skip
def test_a_result_lacking_one_part_fails_every_check_that_needs_that_part_with_its_code(
    tmp_path: Path, part: str, failed: set[tuple[str, str]]
) -> None:
    script = BROKEN / "results_missing_parts.py"
    result = suite(command(sys.executable, script, "--db", tmp_path / "crm.db", "--part", part))

    assert failures(result) == {(req, "update_deal", problem) for req, problem in failed}
    assert result.verified_operations == ["charge_order", "export_report"]


def run_flawed(flaw: str, tmp_path: Path) -> SuiteResult:
    script = BROKEN / "binding_surface.py"
    return suite(command(sys.executable, script, "--db", tmp_path / "crm.db", "--flaw", flaw))


@pytest.mark.parametrize(
    ("flaw", "problem"), [("keys_unlisted", "missing_binding_tool"), ("keys_unmarked", "binding_not_marked")]
)
def test_a_keys_tool_missing_from_tools_list_or_not_marked_binding_fails_j_4_7_only(
    tmp_path: Path, flaw: str, problem: str
) -> None:
    result = run_flawed(flaw, tmp_path)

    assert failures(result) == {("J-4.7", None, problem)}
    assert result.verified_operations == []  # a server-wide failure verifies nothing


@pytest.mark.parametrize(
    ("flaw", "problem"), [("kid_names_another_key", "bad_keys_answer"), ("no_keys", "no_keys")]
)
def test_keys_that_cannot_be_read_or_none_at_all_fail_j_4_7_and_every_signature_check(
    tmp_path: Path, flaw: str, problem: str
) -> None:
    result = run_flawed(flaw, tmp_path)

    found = failures(result)
    assert {(op, code) for req, op, code in found if req == "J-4.7"} == {(None, problem)}
    assert {(req, op) for req, op, code in found if code == "answer_not_signed"} >= {("J-4.6", None)}
    assert ("J-3.2", "update_deal", "unknown_kid") in found


def test_a_check_that_takes_longer_than_its_limit_fails_as_timed_out_and_the_suite_goes_on(
    tmp_path: Path,
) -> None:
    script = BROKEN / "undo_that_lies.py"
    hanging = command(sys.executable, script, "--db", tmp_path / "crm.db", "--lie", "hang_on_unknown_token")

    result = anyio.run(partial(run_server_suite, Target(hanging), check_timeout=5.0))

    assert failures(result) == {("J-4.6", None, "timed_out")}
    assert result.verified_operations == []


def test_a_server_that_dies_mid_suite_fails_the_check_it_died_in_and_every_later_one_as_crashed(
    tmp_path: Path,
) -> None:
    result = run_broken("dies_on_update_deal", tmp_path)

    failed = [(o.requirement, o.operation, o.problem) for o in result.outcomes if o.outcome == "failed"]
    assert failed[0] == ("J-3.1", "update_deal", "check_crashed")
    assert {problem for _, _, problem in failed} == {"check_crashed"}
    assert all(o.outcome == "passed" for o in result.outcomes if o.requirement.startswith("J-2"))


def test_an_undo_that_leaves_a_created_resource_in_place_fails_j_4_2_for_that_operation(
    tmp_path: Path,
) -> None:
    result = run_broken("creation_that_stays", tmp_path)

    assert failures(result) == {("J-4.2", "open_deal", "created_resource_remains")}
    assert result.verified_operations == ["update_deal"]
