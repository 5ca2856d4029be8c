"""Deliberately broken variants of the CRM each fail the suite with the right requirement id, and
only those of their operations stay unverified."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_helpers import broken_module, failures, run_broken, run_broken_over_stdio

from hatp_journal.toolkit import _undo as undo


@pytest.mark.parametrize(
    ("variant", "requirement", "problem", "also"),
    [
        ("no_version_check", "J-4.3", "check_missed_conflict", {("J-4.8", "move_amount", "missed_conflict")}),
        ("no_expiry", "J-4.4", "check_missed_expiry", set()),
        ("compensate_not_idempotent", "J-4.5", "repeat_differs", set()),
    ],
)
def test_a_server_whose_undo_is_broken_fails_exactly_that_requirement_for_each_undoable_operation(
    tmp_path: Path, variant: str, requirement: str, problem: str, also: set[tuple[str, str, str]]
) -> None:
    result = run_broken(variant, tmp_path)

    undoable = ("update_deal", "move_amount", "charge_order")
    assert failures(result) == {(requirement, operation, problem) for operation in undoable} | also
    assert not result.passed
    assert result.verified_operations == ["export_report"]


def test_a_summary_taken_from_the_agents_arguments_fails_j_3_3_for_that_operation_only(
    tmp_path: Path,
) -> None:
    result = run_broken("summary_from_arguments", tmp_path)

    assert failures(result) == {("J-3.3", "update_deal", "summary_misses_stored_change")}
    assert result.verified_operations == ["move_amount", "charge_order", "export_report"]


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
    assert result.verified_operations == ["move_amount"]  # its results are left as they are


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
    assert result.verified_operations == ["update_deal", "move_amount", "charge_order", "export_report"]


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


def test_a_server_that_dies_mid_suite_fails_the_check_it_died_in_and_every_later_one_as_crashed(
    tmp_path: Path,
) -> None:
    result = run_broken_over_stdio("dies_on_update_deal", tmp_path)  # it exits: a process of its own

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


def test_what_a_variant_built_in_process_replaces_in_the_toolkit_is_put_back_afterwards(
    tmp_path: Path,
) -> None:
    expired, matches = undo.is_expired, undo.still_matches

    with broken_module("_crm").toolkit_put_back():
        for name in ("no_expiry", "no_version_check"):
            broken_module(name).VARIANT.build(["--db", str(tmp_path / f"{name}.db")])[1].engine.dispose()
        replaced = (undo.is_expired, undo.still_matches) != (expired, matches)

    assert replaced
    assert (undo.is_expired, undo.still_matches) == (expired, matches)
