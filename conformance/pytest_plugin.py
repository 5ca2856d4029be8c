"""pytest plugin: run the conformance suite inside your own test run.

Inert unless given a target::

    pytest --hatp-target "python -m my_server --db /tmp/t.db" [--hatp-expected-failures xfail.toml]
    pytest --hatp-recorder my_package.conformance:recorder_adapter

Adds one test per requirement (``hatp-conformance::J-4.3``), failing with the operations and
problems that broke it. The suite runs once, when the first of those tests runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from hatp_journal.conformance.expected import load_expected_failures
from hatp_journal.conformance.manifest import requirements
from hatp_journal.conformance.report import outcome_line
from hatp_journal.conformance.results import SuiteResult

_RESULTS = pytest.StashKey[list[SuiteResult]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--hatp-target``, ``--hatp-recorder``, ``--hatp-expected-failures``."""
    group = parser.getgroup("hatp-conformance", "HATP Journal conformance suite")
    group.addoption("--hatp-target", help="a command that starts a stdio MCP server, or its URL")
    group.addoption("--hatp-recorder", help="a Recorder adapter as module:factory")
    group.addoption("--hatp-expected-failures", type=Path, help="TOML file of expected failures with reasons")


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add the suite's tests when a target is given; otherwise do nothing."""
    targets = {"server": config.getoption("hatp_target"), "recorder": config.getoption("hatp_recorder")}
    if not any(targets.values()):
        return
    suite = ConformanceSuite.from_parent(session, name="hatp-conformance", nodeid="hatp-conformance")
    items.extend(item for item in suite.collect() if targets[requirements()[item.name].target])


class ConformanceSuite(pytest.Collector):
    """The suite's requirements as tests."""

    def collect(self) -> Iterator[RequirementItem]:
        """One test per requirement of the manifest."""
        for requirement in requirements():
            yield RequirementItem.from_parent(self, name=requirement)


class RequirementItem(pytest.Item):
    """Passes when every check of its requirement passed (or failed as expected)."""

    def runtest(self) -> None:
        """Run the suite once, then judge this requirement's outcomes."""
        outcomes = [
            outcome
            for result in _results(self.config)
            for outcome in result.outcomes
            if outcome.requirement == self.name
        ]
        broken = [outcome for outcome in outcomes if outcome.outcome in ("failed", "xpassed")]
        if broken:
            pytest.fail("\n".join(outcome_line(outcome) for outcome in broken), pytrace=False)
        ran = [outcome for outcome in outcomes if outcome.outcome != "skipped"]
        if not ran:
            pytest.skip("; ".join(outcome.detail for outcome in outcomes) or "no check applied")
        expected = [outcome for outcome in ran if outcome.outcome == "xfailed"]
        if expected:
            pytest.xfail("; ".join(f"{outcome.operation or '-'}: {outcome.reason}" for outcome in expected))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the requirement is written down."""
        return Path("requirements.toml"), 0, f"{self.name} {requirements()[self.name].title}"


def _results(config: pytest.Config) -> list[SuiteResult]:
    if _RESULTS not in config.stash:
        path = config.getoption("hatp_expected_failures")
        expected = load_expected_failures(path) if path else []
        target, recorder = config.getoption("hatp_target"), config.getoption("hatp_recorder")
        # The MCP client (the `serve` extra) only once a target is given: pytest loads this
        # plugin in every environment with the toolkit, whose own install has no MCP stack.
        from hatp_journal.conformance.runner import run_suites

        config.stash[_RESULTS] = anyio.run(run_suites, target, recorder, expected)
    results = config.stash[_RESULTS]
    unmatched = [label for result in results for label in result.unmatched_expectations]
    if unmatched:
        pytest.fail(f"expected failures that matched no check: {unmatched}", pytrace=False)
    return results
