"""A CRM whose results lack one part (broken/results_missing_parts.py --part NAME), or whose binding
surface is wrong (broken/binding_surface.py --flaw NAME), fails every check that needs that part
with its problem code."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_helpers import failures, run_broken

from hatp_journal.conformance import SuiteResult

UNDO = ("J-4.1", "J-4.2", "J-4.3", "J-4.4", "J-4.5")
CALLED = (*UNDO, "J-4.8")  # J-4.8 calls the tool, then stops for a call that wrote one resource
RESULTS = ("J-3.1", "J-3.2", "J-3.3")


@pytest.mark.parametrize(
    ("part", "failed"),
    [
        ("token", {("J-3.1", "no_token")} | {(req, "no_token") for req in UNDO}),
        ("version", {("J-3.3", "version_not_stored")} | {(req, "no_version") for req in ("J-3.1", *UNDO)}),
        ("effect", {("J-3.1", "no_effect"), ("J-3.3", "no_summary")} | {(r, "no_effect") for r in CALLED}),
        ("fields", {("J-3.3", "effect_not_stored")}),
        ("undo", {("J-3.1", "no_undo"), ("J-4.4", "no_undo")}),
        ("undo_by", {("J-3.1", "no_undo_by"), ("J-4.4", "no_undo_by")}),
        ("undo_by_not_utc", {("J-3.1", "bad_undo_by"), ("J-4.4", "bad_undo_by")}),
        ("journal", {(req, "no_journal_object") for req in (*RESULTS, *CALLED)}),
        ("garbled", {(req, "invalid_journal_object") for req in (*RESULTS, *CALLED)}),
        ("error", {(req, "call_failed") for req in (*RESULTS, *CALLED)}),
    ],
)  # fmt: skip
def test_a_result_lacking_one_part_fails_every_check_that_needs_that_part_with_its_code(
    tmp_path: Path, part: str, failed: set[tuple[str, str]]
) -> None:
    result = run_broken("results_missing_parts", tmp_path, "--part", part)

    assert failures(result) == {(req, "update_deal", problem) for req, problem in failed}
    assert result.verified_operations == ["move_amount", "charge_order", "export_report"]


def run_flawed(flaw: str, tmp_path: Path) -> SuiteResult:
    return run_broken("binding_surface", tmp_path, "--flaw", flaw)


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
