"""How a check ends: it returns (passed), raises :class:`CheckFailed` or :class:`NotTestable`."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class CheckFailed(AssertionError):
    """The target broke the requirement. ``problem`` is a stable code, ``detail`` says what was seen."""

    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(f"{problem}: {detail}")
        self.problem = problem
        self.detail = detail


class NotTestable(Exception):
    """The check could not run (no sample, no outside edit, a testing tool refused): skipped."""


def expect(condition: bool, problem: str, detail: str) -> None:
    """Fail with ``problem`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(problem, detail)


def require(value: T | None, problem: str, detail: str) -> T:
    """``value``, or fail with ``problem`` when it is missing (None or empty)."""
    if value is None or value == "":
        raise CheckFailed(problem, detail)
    return value
