"""Why a person's decision on an ask or a plan did not count: a stable code beside the sentence.

The decision is recorded all the same (``counted: false``, its ``why``); the code is what
``approve``/``deny`` print (exit status 2) and what a program reads (docs/undo.md, "Refusals").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum

from hatp_journal._shared.text import shown


class NotCounted(StrEnum):
    """Which check a decision failed."""

    NOT_PERMITTED = "NOT_PERMITTED"
    """The person is not in the directory, or does not hold the role that decides."""
    WRONG_KEY = "WRONG_KEY"
    """The key that signed is not the person's key in the directory (or that key can't be read)."""
    NO_UNDO_AUTHORITY = "NO_UNDO_AUTHORITY"
    """The policy names no ``undoAuthority``: nobody may approve an undo."""
    ALREADY_DECIDED = "ALREADY_DECIDED"
    """A decision on it already counted (or the call was already made or refused)."""
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    """Its deadline passed: it was withdrawn."""
    PLAN_STALE = "PLAN_STALE"
    """The plan built again now differs from the one shown (new calls, or a step checks differently)."""


@dataclass(frozen=True)
class Refused:
    """A decision that would not count: the code, and why in words."""

    code: NotCounted
    why: str


def said_not_counted(code: NotCounted | None, message: str) -> int:
    """A decision that did not count, as every refusal reads: ``hatp-recorder: CODE: why`` on
    stderr, exit status 2 (docs/undo.md, "Refusals"). The run keeps it, ``counted: false``."""
    print(f"hatp-recorder: {code}: {shown(message)}", file=sys.stderr)
    return 2
