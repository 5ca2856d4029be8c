"""The checks, each registered under a requirement id of the manifest and what it applies to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hatp_journal.conformance.manifest import requirements

if TYPE_CHECKING:
    from hatp_journal.conformance.checks.context import CheckContext
    from hatp_journal.conformance.recorder_target import RecordedRun, RecorderUnderTest

Applies = Literal["server", "tool", "mutating", "compensate", "none"]
"""``server``: once per target; ``tool``: every declared tool; ``mutating``: ``compensate`` and
``none`` operations; ``compensate``/``none``: operations of that kind."""

ServerCheckFunction = Callable[["CheckContext"], Awaitable[None]]
RecorderCheckFunction = Callable[["RecorderUnderTest", "RecordedRun"], Awaitable[None]]


@dataclass(frozen=True)
class ServerCheck:
    """A check against a tool server."""

    requirement: str
    applies: Applies
    function: ServerCheckFunction


@dataclass(frozen=True)
class RecorderCheck:
    """A check against a Recorder; the function gets the adapter and the run it journaled."""

    requirement: str
    function: RecorderCheckFunction


SERVER_CHECKS: list[ServerCheck] = []
RECORDER_CHECKS: list[RecorderCheck] = []


def server_check(requirement: str, applies: Applies) -> Callable[[ServerCheckFunction], ServerCheckFunction]:
    """Register a server check under ``requirement``."""
    _known(requirement, "server")

    def attach(function: ServerCheckFunction) -> ServerCheckFunction:
        SERVER_CHECKS.append(ServerCheck(requirement, applies, function))
        return function

    return attach


def recorder_check(requirement: str) -> Callable[[RecorderCheckFunction], RecorderCheckFunction]:
    """Register a Recorder check under ``requirement``."""
    _known(requirement, "recorder")

    def attach(function: RecorderCheckFunction) -> RecorderCheckFunction:
        RECORDER_CHECKS.append(RecorderCheck(requirement, function))
        return function

    return attach


def _known(requirement: str, target: str) -> None:
    # Fail at import: a check under an id the manifest doesn't list would be reported as nothing.
    found = requirements().get(requirement)
    if found is None or found.target != target:
        raise ValueError(
            f"{requirement} is not a {target} requirement in requirements.toml; add it there first"
        )
