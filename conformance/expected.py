"""Expected failures: a TOML file of requirements a target knowingly fails, each with a reason.

    [[expected]]
    requirement = "J-4.4"
    operation = "update_deal"     # optional: every operation when absent
    reason = "windows are enforced from release 0.3"

Strict, as in sigstore-conformance: an expected failure that passes is reported as a failure
(``xpassed``), and an entry that matches no check makes the run fail, so the file stays honest.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hatp_journal.conformance.manifest import requirements
from hatp_journal.conformance.results import CheckOutcome


class ExpectedFailuresError(ValueError):
    """The expected-failures file can't be used. ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ExpectedFailure(BaseModel):
    """One requirement (for one operation, or all) that is expected to fail, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirement: str
    operation: str | None = Field(default=None, min_length=1)
    reason: str

    def matches(self, outcome: CheckOutcome) -> bool:
        """Whether this entry covers ``outcome``."""
        return self.requirement == outcome.requirement and self.operation in (None, outcome.operation)

    def label(self) -> str:
        """``J-4.4`` or ``J-4.4 update_deal``."""
        return self.requirement + (f" {self.operation}" if self.operation else "")


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected: list[ExpectedFailure] = Field(default_factory=list)


def load_expected_failures(path: Path) -> list[ExpectedFailure]:
    """Read and check the file: every entry needs a known requirement and a reason, once each."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ExpectedFailuresError("UNREADABLE", f"{path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ExpectedFailuresError("UNREADABLE", f"{path}: {error}") from None
    try:
        entries = _File.model_validate(data).expected
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ExpectedFailuresError("MALFORMED", f"{path}: {where}: {first['msg']}") from None
    seen: set[tuple[str, str | None]] = set()
    for entry in entries:
        if entry.requirement not in requirements():
            raise ExpectedFailuresError(
                "UNKNOWN_REQUIREMENT", f"{path}: {entry.requirement} is no requirement"
            )
        if not entry.reason.strip():
            raise ExpectedFailuresError("NO_REASON", f"{path}: {entry.label()} needs a reason")
        if (entry.requirement, entry.operation) in seen:
            raise ExpectedFailuresError("DUPLICATE", f"{path}: {entry.label()} is listed twice")
        seen.add((entry.requirement, entry.operation))
    return entries


def apply_expected_failures(
    outcomes: Iterable[CheckOutcome], expected: list[ExpectedFailure]
) -> tuple[list[CheckOutcome], list[str]]:
    """Outcomes with expected failures marked (``xfailed``/``xpassed``), and entries that matched nothing."""
    used: set[int] = set()
    marked = []
    for outcome in outcomes:
        found = next((i for i, entry in enumerate(expected) if entry.matches(outcome)), None)
        if found is not None:
            used.add(found)
        if found is None or outcome.outcome == "skipped":
            marked.append(outcome)
            continue
        status = "xfailed" if outcome.outcome == "failed" else "xpassed"
        marked.append(outcome.model_copy(update={"outcome": status, "reason": expected[found].reason}))
    unmatched = [entry.label() for i, entry in enumerate(expected) if i not in used]
    return marked, unmatched
