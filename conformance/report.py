"""The human summary of a run: one block per requirement, its outcomes under it."""

from __future__ import annotations

from hatp_journal.conformance.manifest import requirements
from hatp_journal.conformance.results import CheckOutcome, SuiteResult

_MARKS = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "xfailed": "XFAIL", "xpassed": "XPASS"}


def summary(result: SuiteResult) -> str:
    """What ran, what failed and why, the totals and the operations now verified."""
    who = result.server or result.target
    lines = [f"{result.suite.name} {result.suite.version} against {who} ({result.target})"]
    by_requirement: dict[str, list[CheckOutcome]] = {}
    for outcome in result.outcomes:
        by_requirement.setdefault(outcome.requirement, []).append(outcome)
    for requirement, outcomes in by_requirement.items():
        lines.append(f"{requirement} {requirements()[requirement].title}")
        passed = [outcome.operation or "-" for outcome in outcomes if outcome.outcome == "passed"]
        if passed:
            lines.append(f"  PASS  {', '.join(passed)}")
        lines.extend(outcome_line(outcome) for outcome in outcomes if outcome.outcome != "passed")
    lines.extend(
        f"  FAIL  expected failure {label} matched no check" for label in result.unmatched_expectations
    )
    counts = {mark: sum(1 for outcome in result.outcomes if outcome.outcome == mark) for mark in _MARKS}
    lines.append(", ".join(f"{count} {mark}" for mark, count in counts.items() if count) or "no checks ran")
    if result.kind == "server":
        lines.append(f"verified operations: {', '.join(result.verified_operations) or 'none'}")
    lines.append(verdict(result))
    return "\n".join(lines)


def verdict(result: SuiteResult) -> str:
    """The last line: a skipped check was not tested, so a run with one is incomplete, not passed."""
    if not result.passed:
        return "FAILED"
    skipped = len(result.skipped())
    return f"INCOMPLETE: {skipped} checks skipped, not tested" if skipped else "PASSED"


def outcome_line(outcome: CheckOutcome) -> str:
    """One line for an outcome that did not simply pass."""
    where = outcome.operation or "-"
    mark = _MARKS[outcome.outcome]
    if outcome.outcome == "skipped":
        return f"  {mark}  {where}: not testable: {outcome.detail}"
    if outcome.outcome == "xpassed":
        return f"  {mark} {where}: passed, but listed as an expected failure ({outcome.reason})"
    said = f"  {mark:<5} {where}: {outcome.problem}: {outcome.detail}"
    return said + (f" (expected: {outcome.reason})" if outcome.reason else "")
