"""The requirements manifest and the checks stay in step, both ways, and each id points at its section."""

from __future__ import annotations

import pytest

import hatp_journal.conformance as conformance
from hatp_journal.conformance import requirements
from hatp_journal.conformance.checks.registry import RECORDER_CHECKS, SERVER_CHECKS, server_check
from hatp_journal.conformance.manifest import manifest_digest
from hatp_journal.conformance.runner import suite_info


def test_every_requirement_in_the_manifest_has_a_check_and_every_check_names_one() -> None:
    checked = {check.requirement for check in SERVER_CHECKS} | {
        check.requirement for check in RECORDER_CHECKS
    }

    assert checked == set(requirements())


def test_server_checks_are_for_server_requirements_and_recorder_checks_for_recorder_ones() -> None:
    assert {requirements()[check.requirement].target for check in SERVER_CHECKS} == {"server"}
    assert {requirements()[check.requirement].target for check in RECORDER_CHECKS} == {"recorder"}


def test_each_requirement_id_names_the_spec_section_it_comes_from() -> None:
    for requirement in requirements().values():
        section = requirement.id.split("-")[1].split(".")[0]
        assert requirement.spec == f"§{section}", requirement.id


def test_a_check_under_an_id_the_manifest_does_not_list_is_refused_when_registered() -> None:
    with pytest.raises(ValueError, match=r"requirements\.toml"):
        server_check("J-99.1", applies="server")
    with pytest.raises(ValueError, match=r"requirements\.toml"):
        server_check("R-8.1", applies="server")


def test_results_name_the_suite_version_and_the_manifest_they_were_checked_against() -> None:
    info = suite_info()

    assert info.manifest_digest == manifest_digest()
    assert info.manifest_digest.startswith("sha256:")
    assert info.version


def test_the_public_api_is_pinned() -> None:
    assert sorted(conformance.__all__) == [
        "AgentCall",
        "Attestation",
        "CheckOutcome",
        "ExpectedFailure",
        "ExpectedFailuresError",
        "RecordVerdict",
        "RecordedRun",
        "RecorderUnderTest",
        "Requirement",
        "SuiteResult",
        "Target",
        "TargetError",
        "attest",
        "load_expected_failures",
        "requirements",
        "run_recorder_suite",
        "run_server_suite",
        "summary",
        "verify_attestation",
    ]
    for name in conformance.__all__:
        assert getattr(conformance, name) is not None
