"""Helpers of the conformance tests: target command lines, in-process runs, the CLI as a command."""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from hatp_journal.conformance import SuiteResult, Target, run_server_suite
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


def run_broken(name: str, tmp_path: Path, *more: str) -> SuiteResult:
    """Run the suite against the broken variant ``broken/{name}.py`` (its ``more`` arguments after
    ``--db``), with its database in ``tmp_path``."""
    return suite(command(sys.executable, BROKEN / f"{name}.py", "--db", tmp_path / "crm.db", *more))


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
