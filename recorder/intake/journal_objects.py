"""Intake checks (protocol.md §8): a downstream's journal object is bounded, validated and verified
before the Recorder trusts it. A bad object is kept, marked ``unresolved`` with the reason,
and treated as ``unknown`` — never a crash, never dropped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.toolkit.signing import VerifyKey, verify_call, verify_digest_call
from hatp_journal.toolkit.wire import META_KEY, CallBinding, ErrorBody, JournalObject

MAX_NODES = 5_000
MAX_DEPTH = 32
MAX_STRING = 16_384
SAFE_INTEGER = 2**53 - 1
"""The largest integer RFC 8785 can write (what the Run Record hashes)."""

IntakeStatus = Literal["verified", "unresolved", "absent", "error"]


@dataclass(frozen=True)
class Intake:
    """What the Recorder concluded about one result's journal object."""

    status: IntakeStatus
    kind: Literal["compensate", "none", "unknown", "read"]
    reason: str | None = None
    journal: JournalObject | None = None
    raw: Any = None

    def wire(self) -> dict[str, Any]:
        """The intake verdict as recorded in the entry."""
        verdict: dict[str, Any] = {"status": self.status, "kind": self.kind}
        if self.reason:
            verdict["reason"] = self.reason
        return verdict


def bounded(value: Any) -> str | None:
    """Why ``value`` is too big, too deep or not plain JSON; None if it is fine.

    Walks iteratively, so a hostile depth can't raise ``RecursionError``.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES} values"
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH}"
        kind = type(item)
        # What parsed JSON holds is told apart by its exact type first: no ABC check for a dict.
        if kind is dict:
            for key, child in item.items():
                if not isinstance(key, str) or len(key) > MAX_STRING or not (key.isascii() or _unicode(key)):
                    return "a key that is not a short string"
                stack.append((child, depth + 1))
        elif kind is str:
            if len(item) > MAX_STRING:
                return f"a string longer than {MAX_STRING}"
            if not (item.isascii() or _unicode(item)):  # most are ASCII: no call for them
                return "a string with a lone surrogate"
        elif kind is list:
            stack.extend((child, depth + 1) for child in item)
        elif kind is int:
            if abs(item) > SAFE_INTEGER:
                return "an integer beyond 2^53 - 1"
        elif kind is bool or item is None:
            continue
        else:
            problem = _other(item, depth, stack)
            if problem is not None:
                return problem
    return None


def _other(item: Any, depth: int, stack: list[tuple[Any, int]]) -> str | None:
    """:func:`bounded`'s step for any value not of a plain JSON type (a float, a subclass, a Mapping)."""
    if isinstance(item, Mapping):
        for key, child in item.items():
            if not isinstance(key, str) or len(key) > MAX_STRING or not _unicode(key):
                return "a key that is not a short string"
            stack.append((child, depth + 1))
    elif isinstance(item, list):
        stack.extend((child, depth + 1) for child in item)
    elif isinstance(item, str):
        if len(item) > MAX_STRING:
            return f"a string longer than {MAX_STRING}"
        if not _unicode(item):
            return "a string with a lone surrogate"
    elif isinstance(item, float):
        if item != item or item in (float("inf"), float("-inf")):
            return "a number that is not finite"
    elif isinstance(item, bool) or item is None:
        return None
    elif isinstance(item, int):
        if abs(item) > SAFE_INTEGER:
            return "an integer beyond 2^53 - 1"
    else:
        return f"a value of type {type(item).__name__}"
    return None


def _unicode(text: str) -> bool:
    """False when ``text`` holds a lone surrogate, which has no UTF-8 and no canonical JSON."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def take_in(
    meta: Mapping[str, Any] | None,
    *,
    tool: str,
    arguments: Mapping[str, Any],
    server_keys: Mapping[str, VerifyKey],
    declared_kind: Literal["compensate", "none", "unknown", "read"],
    arguments_digest: str | None = None,
    call: CallBinding | None = None,
) -> Intake:
    """Check the ``_meta["hatp/journal"]`` of one result against the call that made it.

    ``arguments_digest``: the arguments' ``sha256:`` digest if the caller has it already (the
    gateway does), so the receipt is checked without canonicalizing them again. ``call``: the
    binding sent with the request; an object bound to another call (a receipt replayed by the
    server) is unresolved.
    """
    raw = (meta or {}).get(META_KEY) if isinstance(meta, Mapping) else None
    if raw is None:
        kind: Literal["none", "unknown", "read"] = "read" if declared_kind == "read" else "unknown"
        if declared_kind == "none":
            kind = "none"
        return Intake("absent", kind)
    problem = bounded(raw)
    if problem is not None:
        return Intake("unresolved", "unknown", f"journal object rejected before parsing: {problem}")
    if not isinstance(raw, Mapping):
        return Intake("unresolved", "unknown", "journal object is not a JSON object", raw=raw)
    if set(raw) == {"error"}:
        # An error result: the server's stable code says whether the call changed anything.
        try:
            error = ErrorBody.model_validate(raw["error"])
        except ValidationError:
            return Intake("unresolved", "unknown", "error object does not fit the wire format", raw=raw)
        return Intake("error", "unknown", f"{error.code}: {error.message}", raw=raw)
    try:
        journal = JournalObject.model_validate(raw)
    except ValidationError as error:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in error.errors()[:5])
        return Intake(
            "unresolved", "unknown", f"journal object does not fit the wire format: {fields}", raw=raw
        )
    if (
        journal.undo is not None
        and journal.undo.undo_by is not None
        and not is_wire_time(journal.undo.undo_by)
    ):
        # Signed or not, a window that is no time (a date alone, an offset, 23:59:60) can't be kept.
        return Intake(
            "unresolved", "unknown", "journal object does not fit the wire format: undo.undoBy", raw=raw
        )
    if arguments_digest is None:
        verified = verify_call(raw, tool, arguments, server_keys)
    else:
        verified = verify_digest_call(raw, tool, arguments_digest, server_keys)
    if not verified:
        return Intake(
            "unresolved", "unknown", "receipt does not verify with the server's pinned key", raw=raw
        )
    if journal.call is not None and journal.call != call:
        # A receipt of another call (or of a call no binding was sent for): replayed by the server.
        return Intake("unresolved", "unknown", "journal object bound to another call", raw=raw)
    return Intake("verified", _kind(journal), journal=journal, raw=raw)


def _kind(journal: JournalObject) -> Literal["compensate", "none", "unknown", "read"]:
    if journal.undo is None:
        return "read" if journal.read else "unknown"
    if journal.undo.kind == "compensate":
        effect = journal.effect
        # Without a version and a token nothing can be undone automatically (protocol.md §3).
        if effect is None or effect.version is None or journal.compensation_token is None:
            return "unknown"
        if any(write.version is None for write in effect.also or ()):
            return "unknown"  # one resource it wrote can't be checked: neither can the undo
        return "compensate"
    return journal.undo.kind
