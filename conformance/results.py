"""The suite's machine-readable result, as pydantic models (JSON Schema in ``docs/schema/``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hatp_journal.toolkit.attestation import SuiteInfo
from hatp_journal.toolkit.wire import PublicKey, WireModel

Outcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed"]
"""``xfailed``: failed as the expected-failures file says; ``xpassed``: listed there but passed,
which counts as a failure (the file must be kept honest)."""


class CheckOutcome(WireModel):
    """The outcome of one requirement's check, for one operation or for the whole target."""

    requirement: str
    operation: str | None = None
    outcome: Outcome
    problem: str | None = Field(
        default=None, description="Stable code of what failed, e.g. compensated_over_change"
    )
    detail: str = ""
    reason: str | None = Field(default=None, description="Why the failure is expected (xfailed, xpassed)")
    seconds: float = 0.0


class OperationReport(WireModel):
    """One declared operation and whether it passed every check that applies to it."""

    tool: str
    kind: Literal["compensate", "none", "read", "unknown"]
    verified: bool
    declaration_digest: str | None = Field(
        default=None,
        description="sha256 of the RFC 8785 form of the declaration as tools/list published it "
        "(as the toolkit's Declaration reads it); none for a tool without a readable declaration",
    )


class SuiteResult(WireModel):
    """Everything one run found. ``passed``: nothing failed and no expected failure passed."""

    suite: SuiteInfo
    target: str
    kind: Literal["server", "recorder"]
    server: str | None = Field(default=None, description="The server's URI, as its keys answer names it")
    server_keys: list[PublicKey] = Field(default_factory=list)
    started_at: str
    finished_at: str
    outcomes: list[CheckOutcome]
    operations: list[OperationReport] = Field(default_factory=list)
    unmatched_expectations: list[str] = Field(
        default_factory=list, description="Expected failures that matched no check (strict: a failure)"
    )
    passed: bool

    @property
    def verified_operations(self) -> list[str]:
        """The operations that passed every check that applies to them."""
        return [operation.tool for operation in self.operations if operation.verified]

    def skipped(self) -> list[CheckOutcome]:
        """Checks that could not run against this target (not tested, so not passed)."""
        return [outcome for outcome in self.outcomes if outcome.outcome == "skipped"]

    def failed(self) -> list[CheckOutcome]:
        """Failed checks and expected failures that passed."""
        return [outcome for outcome in self.outcomes if outcome.outcome in ("failed", "xpassed")]
