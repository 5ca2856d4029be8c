"""Helpers of the conformance tests: target command lines, in-process runs, the CLI as a command."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

from hatp_journal.conformance import SuiteResult, Target, run_server_suite
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit._testing_surface import TESTING_ENV

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
    ``--db``), with its database in ``tmp_path``: built in this process and spoken to over MCP's
    in-memory transport, which saves a Python start per run (a variant that must die or hang runs
    over stdio: :func:`run_broken_over_stdio`)."""
    variant = broken_module(name).VARIANT
    crm_module = broken_module("_crm")
    argv = ["--db", str(tmp_path / "crm.db"), *more]

    async def run() -> SuiteResult:
        with crm_module.toolkit_put_back():
            previous = os.environ.get(TESTING_ENV)
            os.environ[TESTING_ENV] = "1"  # as the suite sets it for a command it starts
            try:
                server, journal = variant.build(argv)
            finally:
                _restore(TESTING_ENV, previous)
            try:
                return await run_server_suite(Target(f"broken/{name}.py", server=server))
            finally:
                journal.engine.dispose()

    return anyio.run(run)


def run_broken_over_stdio(name: str, tmp_path: Path, *more: str) -> SuiteResult:
    """:func:`run_broken`, with the variant as a process the suite starts and speaks stdio to."""
    return suite(command(sys.executable, BROKEN / f"{name}.py", "--db", tmp_path / "crm.db", *more))


def broken_module(name: str) -> ModuleType:
    """``broken/{name}.py`` imported once per process (as ``_crm`` for the helper the variants
    import by that name, since their folder is not on the import path)."""
    module_name = name if name == "_crm" else f"broken_{name}"
    if module_name not in sys.modules:
        if name != "_crm":
            broken_module("_crm")
        spec = importlib.util.spec_from_file_location(module_name, BROKEN / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def _restore(variable: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = value


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
