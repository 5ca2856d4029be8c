"""What a Recorder's conformance adapter and the suite hand each other: calls, recorded runs, verdicts.

A Recorder ships an adapter that the conformance suite drives (the protocol is
``hatp_journal.conformance.recorder_target.RecorderUnderTest``). These plain values pass between
the two, so they live on the ground floor: an adapter imports them without importing the suite,
and the suite never imports a Recorder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentCall:
    """One call an agent makes through the Recorder."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRun:
    """A run the Recorder journaled: its exported Run Record, and what the adapter needs to extend it."""

    record: bytes
    handle: Any = None


@dataclass(frozen=True)
class RecordVerdict:
    """What the Recorder's verifier said about a record: ``problems`` are stable codes."""

    ok: bool
    problems: frozenset[str] = frozenset()
