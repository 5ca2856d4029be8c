"""Shared runs of the suite: each server starts once and its result is read by several tests."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from hatp_journal.conformance import SuiteResult, Target, run_server_suite
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey

BROKEN = Path(__file__).parent / "broken"


def command(*argv: str | Path) -> str:
    """A target command line, quoted."""
    return shlex.join(str(part) for part in argv)


def crm(db: Path, key: Path | None = None) -> str:
    """``hatp-crm serve`` as the suite's target."""
    more = ["--key", key] if key else []
    return command(sys.executable, "-m", "hatp_journal.servers.crm.cli", "serve", "--db", db, *more)


def suite(address: str) -> SuiteResult:
    """Run the server suite in this process against ``address``."""
    return anyio.run(partial(run_server_suite, Target(address)))


def failures(result: SuiteResult) -> set[tuple[str, str | None, str | None]]:
    """(requirement, operation, problem) of every failed check."""
    return {(outcome.requirement, outcome.operation, outcome.problem) for outcome in result.failed()}


@dataclass(frozen=True)
class CliRun:
    """``hatp-conformance`` run as a command against the CRM, with what it wrote."""

    status: int
    stdout: str
    result: SuiteResult
    attestation: dict[str, Any]
    signer: SigningKey
    crm_key: SigningKey


def conformance_cli(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``hatp-conformance`` as its console script would."""
    argv = [sys.executable, "-m", "hatp_journal.conformance.cli", *map(str, arguments)]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


@pytest.fixture(scope="session")
def crm_by_cli(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """The CRM checked from the command line once, with a JSON result and a signed attestation."""
    folder = tmp_path_factory.mktemp("crm-cli")
    SigningKey.generate().save(folder / "crm.key")
    ran = conformance_cli(
        "--target", crm(folder / "crm.db", folder / "crm.key"),
        "--json", "result.json",
        "--attest", "crm.attestation.json", "--attest-key", "signer.key",
        cwd=folder,
    )  # fmt: skip
    assert (folder / "result.json").exists(), ran.stderr
    return CliRun(
        status=ran.returncode,
        stdout=ran.stdout,
        result=SuiteResult.model_validate_json((folder / "result.json").read_bytes()),
        attestation=json.loads((folder / "crm.attestation.json").read_bytes()),
        signer=SigningKey.from_file(folder / "signer.key"),
        crm_key=SigningKey.from_file(folder / "crm.key"),
    )


@pytest.fixture(scope="module")
def mail_sink_for_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailSink]:
    """A real SMTP sink for the calendar's and the email server's mail, shared by a module."""
    with MailSink(tmp_path_factory.mktemp("mail") / "maildir") as sink:
        yield sink
