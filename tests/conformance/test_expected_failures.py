"""Expected failures need a reason each, and are strict: one that passes or matches nothing fails the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatp_journal.conformance import CheckOutcome, ExpectedFailuresError, load_expected_failures
from hatp_journal.conformance.expected import ExpectedFailure, apply_expected_failures


def outcome(requirement: str, operation: str | None, status: str) -> CheckOutcome:
    return CheckOutcome.model_validate(
        {"requirement": requirement, "operation": operation, "outcome": status}
    )


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xfail.toml"
    path.write_text(text)
    return path


def test_a_listed_failure_is_expected_and_a_listed_pass_is_reported() -> None:
    expected = [
        ExpectedFailure(requirement="J-4.4", operation="update_deal", reason="windows arrive in 0.3"),
        ExpectedFailure(requirement="J-4.3", reason="versions arrive in 0.3"),
    ]
    outcomes = [
        outcome("J-4.4", "update_deal", "failed"),
        outcome("J-4.4", "charge_order", "failed"),
        outcome("J-4.3", "update_deal", "passed"),
        outcome("J-4.3", "charge_order", "failed"),
    ]

    marked, unmatched = apply_expected_failures(outcomes, expected)

    assert [(o.operation, o.outcome, o.reason) for o in marked] == [
        ("update_deal", "xfailed", "windows arrive in 0.3"),
        ("charge_order", "failed", None),
        ("update_deal", "xpassed", "versions arrive in 0.3"),
        ("charge_order", "xfailed", "versions arrive in 0.3"),
    ]
    assert unmatched == []


def test_an_expected_failure_that_matches_no_check_is_reported() -> None:
    expected = [ExpectedFailure(requirement="J-4.4", operation="delete_deal", reason="not built yet")]

    _, unmatched = apply_expected_failures([outcome("J-4.4", "update_deal", "passed")], expected)

    assert unmatched == ["J-4.4 delete_deal"]


def test_a_file_with_reasons_loads(tmp_path: Path) -> None:
    path = written(tmp_path, '[[expected]]\nrequirement = "J-4.4"\nreason = "windows arrive in 0.3"\n')

    assert load_expected_failures(path) == [
        ExpectedFailure(requirement="J-4.4", reason="windows arrive in 0.3")
    ]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('[[expected]]\nrequirement = "J-4.4"\n', "MALFORMED"),
        ('[[expected]]\nrequirement = "J-4.4"\nreason = "  "\n', "NO_REASON"),
        ('[[expected]]\nrequirement = "J-9.9"\nreason = "typo"\n', "UNKNOWN_REQUIREMENT"),
        ('[[expected]]\nrequirement = "J-4.4"\nreason = "twice"\n' * 2, "DUPLICATE"),
        ("[[expected]\n", "UNREADABLE"),
        ('[[expected]]\nrequirement = "J-4.4"\nreason = "a"\nwhy = "b"\n', "MALFORMED"),
    ],
)
def test_a_file_that_cannot_be_trusted_is_refused_with_a_stable_code(
    tmp_path: Path, text: str, code: str
) -> None:
    with pytest.raises(ExpectedFailuresError) as refused:
        load_expected_failures(written(tmp_path, text))

    assert refused.value.code == code


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExpectedFailuresError) as refused:
        load_expected_failures(tmp_path / "nothing.toml")

    assert refused.value.code == "UNREADABLE"
