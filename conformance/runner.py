"""Run the suite: connect, discover, run every check that applies, mark expected failures."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client
from mcp.types import Tool
from pydantic import ValidationError

from hatp_journal._shared.clock import utc_now, wire_time

# Importing the check modules registers their checks.
from hatp_journal.conformance.checks import declarations, effects, several, undo  # noqa: F401
from hatp_journal.conformance.checks import recorder as recorder_checks
from hatp_journal.conformance.checks.context import CheckContext, Operation, ServerUnderTest
from hatp_journal.conformance.checks.outcome import CheckFailed, NotTestable
from hatp_journal.conformance.checks.registry import RECORDER_CHECKS, SERVER_CHECKS, ServerCheck
from hatp_journal.conformance.expected import ExpectedFailure, apply_expected_failures
from hatp_journal.conformance.manifest import manifest_digest, requirements
from hatp_journal.conformance.recorder_target import RecorderUnderTest, load_recorder
from hatp_journal.conformance.results import CheckOutcome, OperationReport, SuiteResult
from hatp_journal.conformance.session import TargetSession
from hatp_journal.conformance.target import Target, TargetError
from hatp_journal.toolkit.attestation import SuiteInfo
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import BINDING_TOOLS, META_KEY, TESTING_TOOLS, Declaration, KeysAnswer

CALL_TIMEOUT = 30.0
"""Seconds any one MCP request may take."""
CHECK_TIMEOUT = 120.0
"""Seconds one check may take, all its calls together."""

_ORDER = {requirement: index for index, requirement in enumerate(requirements())}


def suite_info() -> SuiteInfo:
    """This suite's name, version and manifest digest."""
    try:
        version = metadata.version("hatp-journal")
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    return SuiteInfo(version=version, manifest_digest=manifest_digest())


async def run_suites(
    target: str | None, recorder: str | None, expected: Sequence[ExpectedFailure] = ()
) -> list[SuiteResult]:
    """The server suite against ``target``, the Recorder suite through ``recorder`` (either may be None)."""
    results = []
    if target:
        servers = [entry for entry in expected if entry.requirement.startswith("J")]
        results.append(await run_server_suite(Target(target), expected=servers))
    if recorder:
        recorders = [entry for entry in expected if entry.requirement.startswith("R")]
        results.append(await run_recorder_suite(load_recorder(recorder), recorder, expected=recorders))
    return results


async def run_server_suite(
    target: Target, *, expected: Sequence[ExpectedFailure] = (), check_timeout: float = CHECK_TIMEOUT
) -> SuiteResult:
    """Run every server check against ``target``. Raises :class:`TargetError` if it can't be tested."""
    started = wire_time(utc_now())
    async with AsyncExitStack() as stack:
        session = TargetSession(await _connect(target, stack))
        tools = {tool.name: tool for tool in await session.tools()}
        missing = [name for name in TESTING_TOOLS if name not in tools]
        if missing:
            raise TargetError(
                "NOT_TESTABLE",
                f"{target.address} offers no test-only surface ({', '.join(missing)}); start it with "
                "HATP_JOURNAL_TESTING=1 (toolkit servers) or see docs/conformance.md",
            )
        server = await _server_under_test(session, tools)
        operations = [
            Operation(tool, _declaration(tool)) for tool in tools.values() if tool.name not in BINDING_TOOLS
        ]
        outcomes = await _run_server_checks(server, operations, check_timeout)
    marked, unmatched = apply_expected_failures(outcomes, list(expected))
    return SuiteResult(
        suite=suite_info(),
        target=target.address,
        kind="server",
        server=server.server,
        server_keys=[key.wire() for key in server.keys.values()],
        started_at=started,
        finished_at=wire_time(utc_now()),
        outcomes=marked,
        operations=_operation_reports(operations, marked),
        unmatched_expectations=unmatched,
        passed=_passed(marked, unmatched),
    )


async def run_recorder_suite(
    recorder_under_test: RecorderUnderTest,
    label: str,
    *,
    expected: Sequence[ExpectedFailure] = (),
    check_timeout: float = CHECK_TIMEOUT,
) -> SuiteResult:
    """Run every Recorder check through ``recorder_under_test`` with the suite's stub server behind it."""
    started = wire_time(utc_now())
    with tempfile.TemporaryDirectory(prefix="hatp-conformance-stub-") as folder:
        stub = [
            sys.executable,
            "-m",
            "hatp_journal.conformance.stub_server",
            "--db",
            str(Path(folder) / "stub.db"),
        ]
        try:
            with anyio.fail_after(check_timeout):
                run = await recorder_under_test.journal_calls(stub, recorder_checks.CALLS)
        except Exception as error:  # noqa: BLE001 - a Recorder that can't journal fails every check
            failed = f"the Recorder could not journal the run: {type(error).__name__}: {error}"
            outcomes = [_failed(check.requirement, "journal_failed", failed) for check in RECORDER_CHECKS]
        else:
            outcomes = [
                await _outcome(
                    check.requirement, None, check_timeout, check.function, recorder_under_test, run
                )
                for check in RECORDER_CHECKS
            ]
    marked, unmatched = apply_expected_failures(outcomes, list(expected))
    return SuiteResult(
        suite=suite_info(),
        target=label,
        kind="recorder",
        started_at=started,
        finished_at=wire_time(utc_now()),
        outcomes=marked,
        unmatched_expectations=unmatched,
        passed=_passed(marked, unmatched),
    )


async def _connect(target: Target, stack: AsyncExitStack) -> Client[Any]:
    client = target.client(CALL_TIMEOUT)  # a command that can't be read is BAD_TARGET, not unreachable
    try:
        return await stack.enter_async_context(client)
    except Exception as error:  # noqa: BLE001 - whatever stops the connection, the target is unreachable
        message = f"cannot connect to {target.address}: {type(error).__name__}: {error}"
        raise TargetError("UNREACHABLE", message) from None


async def _server_under_test(session: TargetSession, tools: dict[str, Tool]) -> ServerUnderTest:
    """The target with its published keys (a problem reading them is J-4.7's to report)."""
    server = ServerUnderTest(session, tools)
    reply = await session.keys()
    try:
        answer = KeysAnswer.model_validate(reply.journal)
        server.keys = {key.kid: VerifyKey.from_wire(key) for key in answer.keys}
        server.server = answer.server
    except (ValidationError, KeyFileError, ValueError) as error:
        server.keys_problem = f"hatp_journal_keys answered {reply.journal or reply.content!r}: {error}"
    return server


async def _run_server_checks(
    server: ServerUnderTest, operations: list[Operation], timeout: float
) -> list[CheckOutcome]:
    outcomes = []
    for check in sorted(SERVER_CHECKS, key=lambda found: _ORDER[found.requirement]):
        for operation in _applicable(check, operations):
            context = CheckContext(server, operation)
            name = operation.name if operation else None
            outcomes.append(await _outcome(check.requirement, name, timeout, check.function, context))
    return outcomes


def _applicable(check: ServerCheck, operations: list[Operation]) -> list[Operation | None]:
    if check.applies == "server":
        return [None]
    if check.applies == "tool":
        return list(operations)
    kinds = ("compensate", "none") if check.applies == "mutating" else (check.applies,)
    return [operation for operation in operations if operation.kind in kinds]


async def _outcome(
    requirement: str,
    operation: str | None,
    timeout: float,
    function: Callable[..., Awaitable[None]],
    *args: Any,
) -> CheckOutcome:
    started = time.monotonic()

    def ended(outcome: str, problem: str | None = None, detail: str = "") -> CheckOutcome:
        seconds = round(time.monotonic() - started, 3)
        return CheckOutcome.model_validate(
            {
                "requirement": requirement,
                "operation": operation,
                "outcome": outcome,
                "problem": problem,
                "detail": detail,
                "seconds": seconds,
            }
        )

    try:
        with anyio.fail_after(timeout):
            await function(*args)
    except CheckFailed as failure:
        return ended("failed", failure.problem, failure.detail)
    except NotTestable as why:
        return ended("skipped", None, str(why))
    except TimeoutError:
        return ended("failed", "timed_out", f"the check took longer than {timeout:g} s")
    except Exception as error:  # noqa: BLE001 - a misbehaving target fails its check; it never stops the suite
        return ended("failed", "check_crashed", f"{type(error).__name__}: {error}")
    return ended("passed")


def _failed(requirement: str, problem: str, detail: str) -> CheckOutcome:
    return CheckOutcome(requirement=requirement, outcome="failed", problem=problem, detail=detail)


def _declaration(tool: Tool) -> Declaration | None:
    try:
        return Declaration.model_validate((tool.meta or {}).get(META_KEY))
    except ValidationError:
        return None


def _operation_reports(operations: list[Operation], outcomes: list[CheckOutcome]) -> list[OperationReport]:
    server_passed = all(outcome.outcome == "passed" for outcome in outcomes if outcome.operation is None)
    reports = []
    for operation in operations:
        own = [outcome for outcome in outcomes if outcome.operation == operation.name]
        verified = (
            server_passed
            and operation.kind in ("compensate", "none")
            and bool(own)
            and all(outcome.outcome == "passed" for outcome in own)
        )
        digest = operation.declaration.digest() if operation.declaration is not None else None
        reports.append(
            OperationReport(
                tool=operation.name, kind=operation.kind, verified=verified, declaration_digest=digest
            )
        )
    return reports


def _passed(outcomes: list[CheckOutcome], unmatched: list[str]) -> bool:
    return not unmatched and all(outcome.outcome not in ("failed", "xpassed") for outcome in outcomes)
