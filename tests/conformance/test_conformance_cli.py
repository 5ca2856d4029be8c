"""``hatp-conformance``: a summary, a JSON result, a signed attestation, strict expected failures,
and exit status 2 with a stable code for what it cannot test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conformance_helpers import BROKEN, CliRun, command

from hatp_journal.conformance import SuiteResult, verify_attestation
from hatp_journal.conformance.cli import exit_status, main
from hatp_journal.conformance.report import summary
from hatp_journal.toolkit import SigningKey

PLAIN = Path(__file__).parents[1] / "recorder" / "plain_server.py"


def test_the_command_line_prints_a_summary_and_signs_an_attestation_of_the_verified_operations(
    crm_by_cli: CliRun,
) -> None:
    attestation = crm_by_cli.attestation

    assert "PASSED" in crm_by_cli.stdout.splitlines()
    assert verify_attestation(attestation, crm_by_cli.signer.public)
    assert [
        operation["tool"] for operation in attestation["operations"]
    ] == crm_by_cli.result.verified_operations
    assert attestation["server"] == {"uri": "crm://acme", "keys": [crm_by_cli.crm_key.public.wire().wire()]}
    assert attestation["suite"] == crm_by_cli.result.suite.wire()
    assert attestation["receipt"]["kid"] == crm_by_cli.signer.kid


def test_a_run_that_skipped_a_check_is_incomplete_not_passed_unless_skips_are_allowed(
    crm_by_cli: CliRun,
) -> None:
    ran = crm_by_cli.result
    [first, *rest] = ran.outcomes
    not_tested = first.model_copy(update={"outcome": "skipped", "detail": "no outside edit for update_deal"})
    skipped = ran.model_copy(update={"outcomes": [not_tested, *rest]})

    assert crm_by_cli.status == exit_status([ran], allow_skips=False) == 0
    assert exit_status([skipped], allow_skips=False) == 3
    assert exit_status([skipped], allow_skips=True) == 0
    assert summary(skipped).splitlines()[-1].startswith("INCOMPLETE")
    assert exit_status([skipped, ran.model_copy(update={"passed": False})], allow_skips=True) == 1


def test_an_attestation_changed_after_signing_no_longer_verifies(crm_by_cli: CliRun) -> None:
    widened = json.loads(json.dumps(crm_by_cli.attestation))
    widened["operations"].append({"tool": "delete_everything", "kind": "compensate", "requirements": []})
    other_signer = SigningKey.generate().public

    assert not verify_attestation(widened, crm_by_cli.signer.public)
    assert not verify_attestation(crm_by_cli.attestation, other_signer)


def test_expected_failures_are_strict_an_expected_failure_that_passes_fails_the_run(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "xfail.toml").write_text(
        '[[expected]]\nrequirement = "J-4.4"\nreason = "windows are enforced from 0.3"\n'
        '[[expected]]\nrequirement = "J-4.3"\noperation = "update_deal"\nreason = "listed by mistake"\n'
    )
    target = command(sys.executable, BROKEN / "no_expiry.py", "--db", tmp_path / "crm.db")

    xfail, out = tmp_path / "xfail.toml", tmp_path / "result.json"

    status = main(["--target", target, "--expected-failures", str(xfail), "--json", str(out)])

    printed = capfd.readouterr().out
    result = SuiteResult.model_validate_json(out.read_bytes())
    assert status == 1
    assert {
        (o.requirement, o.operation, o.outcome) for o in result.outcomes if o.outcome.startswith("x")
    } == {
        ("J-4.4", "update_deal", "xfailed"),
        ("J-4.4", "charge_order", "xfailed"),
        ("J-4.4", "move_amount", "xfailed"),
        ("J-4.3", "update_deal", "xpassed"),
    }
    assert "XPASS" in printed
    assert "XFAIL" in printed


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        (["--target", command(sys.executable, "-c", "pass")], "UNREACHABLE"),
        (["--target", command(sys.executable, PLAIN)], "NOT_TESTABLE"),
        (["--target", "'unclosed"], "BAD_TARGET"),
        (["--recorder", "no_such_module:factory"], "BAD_RECORDER"),
        (["--target", "x", "--expected-failures", "missing.toml"], "UNREADABLE"),
    ],
)
def test_what_cannot_be_tested_exits_2_with_a_stable_code(
    arguments: list[str],
    code: str,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)

    status = main(arguments)

    assert status == 2
    assert f"hatp-conformance: {code}:" in capfd.readouterr().err


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        ["--target", "x", "--attest", "a.json"],
        ["--recorder", "m:f", "--attest", "a.json", "--attest-key", "k"],
    ],
)
def test_a_command_line_missing_what_it_needs_is_a_usage_error(arguments: list[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(arguments)

    assert refused.value.code == 2
