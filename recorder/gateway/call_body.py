"""A ``call`` entry's body as plain JSON, built per call without a pydantic model.

The gateway gathers a call's members as it goes (what the agent asked, the decision, what came
back) in a plain dict keyed like :class:`~hatp_journal.recorder.record.written_bodies.CallRecord`'s
fields, and :func:`call_wire` writes them exactly as ``CallRecord.wire()`` would: camelCase, in
field order, ``None`` left out but for a ``journal`` given as ``None``. A model_construct, a
model_copy per step and a model_dump cost more than the rest of the body's making
(tests/recorder/test_call_body.py holds the two to the same output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hatp_journal.recorder.record.written_bodies import CallRecord

_MEMBERS: tuple[tuple[str, str], ...] = tuple(
    (name, field.alias or name) for name, field in CallRecord.model_fields.items()
)
"""(field, member) in the order ``CallRecord.wire()`` writes them."""

_NAMES = frozenset(name for name, _ in _MEMBERS)

_KEPT_AS_NULL: tuple[tuple[str, str], ...] = tuple(
    (name, alias) for name, alias in _MEMBERS if name in CallRecord.keep_none
)


def call_wire(members: Mapping[str, Any]) -> dict[str, Any]:
    """The body ``CallRecord.model_construct(**members).wire()`` would give, for plain JSON members."""
    if not members.keys() <= _NAMES:
        raise TypeError(f"not members of a call entry: {sorted(set(members) - _NAMES)}")
    data = {alias: members[name] for name, alias in _MEMBERS if members.get(name) is not None}
    for name, alias in _KEPT_AS_NULL:
        if name in members and members[name] is None:
            data[alias] = None
    return data


def outcome(status: str, error: str | None = None) -> dict[str, Any]:
    """``call.outcome`` as ``Outcome(status=..., error=...).wire()`` writes it."""
    return {"status": status} if error is None else {"status": status, "error": error}
