"""The pytest plugin: inert by default; with --hatp-target, one test per requirement in your own run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conformance_helpers import BROKEN, command

from hatp_journal.conformance.pytest_plugin import RequirementItem


def test_the_plugin_is_loaded_in_this_very_run_and_adds_nothing_without_a_target(
    request: pytest.FixtureRequest,
) -> None:
    assert request.config.pluginmanager.has_plugin("hatp_conformance")
    assert not any(isinstance(item, RequirementItem) for item in request.session.items)


def test_with_a_target_each_requirement_is_a_test_and_a_broken_one_fails_naming_its_operations(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_own.py").write_text("def test_the_authors_own_test():\n    assert True\n")
    target = command(sys.executable, BROKEN / "no_expiry.py", "--db", tmp_path / "crm.db")

    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--hatp-target", target],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )

    outcomes = [
        line.split(" - ")[0] for line in ran.stdout.splitlines() if line.startswith(("PASSED", "FAILED"))
    ]
    assert ran.returncode == 1, ran.stdout[-3000:]
    assert [line for line in outcomes if line.startswith("FAILED")] == ["FAILED hatp-conformance::J-4.4"]
    passed = [line for line in outcomes if line.startswith("PASSED hatp-conformance::J-")]
    assert len(passed) == 13  # every requirement but J-4.4, J-4.8 (every resource of a call) included
    assert "PASSED test_own.py::test_the_authors_own_test" in outcomes
    assert "charge_order: check_missed_expiry" in ran.stdout
