"""A tool server's ``check``/``compensate`` answer, bounded and token-free before anything keeps it.

An answer is signed by its server, so a signature proves who said it, never that it is small or
harmless. Before the Recorder verifies it, writes it into a plan or an outcome, or shows it, the
answer is held to the bounds of a journal object (``intake.bounded``: 5,000 values, 32 levels,
strings of 16 KiB, integers within 2^53-1; at most ``max_journal_bytes`` of canonical JSON) and
must carry no compensation token — neither a ``compensationToken`` member at any depth nor the
token it was asked about anywhere in its text. Otherwise it is refused whole with
``ANSWER_REFUSED``: the step is ``unresolved`` (a check) or its attempt ``failed`` (an undo), with
the Recorder's own words only.
"""

from __future__ import annotations

from typing import Any

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.intake.journal_objects import bounded

ANSWER_REFUSED = "ANSWER_REFUSED"
"""The code of a check or undo answer refused at intake (too large, or carrying a token)."""

TOKEN_KEY = "compensationToken"


def refused_answer(answer: Any, token: str, limit: int) -> str | None:
    """Why ``answer`` (as received) can't be kept, in the Recorder's words; None if it can."""
    problem = bounded(answer)
    if problem is not None:
        return f"is refused: {problem}"
    size = len(canonical_bytes(answer))
    if size > limit:
        return f"is refused: {size} bytes, more than max_journal_bytes ({limit})"
    if _names_a_token(answer):
        return f"is refused: it holds a {TOKEN_KEY} member"
    if token and token.encode("utf-8") in canonical_bytes(answer):
        return "is refused: it carries the compensation token"
    return None


def _names_a_token(value: Any) -> bool:
    """Whether a ``compensationToken`` member is anywhere in ``value`` (bounded: walked iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if TOKEN_KEY in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
