"""Agent arguments the Run Record can hold, or why a call is refused before it is forwarded.

Every call's entry keeps its arguments and their digest, as RFC 8785 canonical JSON. An agent
can send arguments that canonical form cannot write (an integer beyond ±(2^53 - 1), a string
with a lone surrogate, NaN or Infinity), nested deeper than the record can safely read back, or
larger than the Recorder keeps. Such a call is refused, not forwarded (the tool server's receipt
would sign a digest that can't be computed), and journaled without its arguments: the entry
keeps why, where, how many bytes, and a digest (see docs/recorder.md, "Arguments the record
can't hold").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.intake.journal_objects import SAFE_INTEGER, _unicode

ARGUMENTS_NOT_CANONICAL = "ARGUMENTS_NOT_CANONICAL"
ARGUMENTS_TOO_DEEP = "ARGUMENTS_TOO_DEEP"
ARGUMENTS_TOO_LARGE = "ARGUMENTS_TOO_LARGE"

MAX_DEPTH = 64
"""Deepest nesting kept (the arguments object is level 0): reading a much deeper entry back
risks Python's recursion limit, which would make the whole run unreadable."""

_SEGMENT = 64
"""Longest path segment quoted in a refusal; longer keys are cut, since the agent chose them."""


class HugeInteger:
    """An integer of more digits than Python converts (4,300), as an agent wrote it: never canonical.

    Only the stdio front's reader makes one (``recorder/front/jsonrpc_lines.py``); it is refused like any
    integer beyond ±(2^53 - 1), and :func:`as_text` writes its digits in full.
    """

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"HugeInteger(<{len(self.digits)} characters>)"


@dataclass(frozen=True)
class Refusal:
    """Why the arguments can't be journaled, and what the entry keeps of them instead."""

    code: str
    reason: str
    kept: dict[str, Any]
    """The entry's members in place of ``arguments`` (all canonical JSON, none of it the value)."""

    def message(self) -> str:
        """What the agent is told."""
        return f"the call was not made: its arguments can't be journaled ({self.reason})"


@dataclass(frozen=True)
class CheckedArguments:
    """Arguments checked for the record: their digest, or the refusal."""

    digest: str | None
    refusal: Refusal | None


def check_arguments(arguments: Any, max_bytes: int) -> CheckedArguments:
    """Whether ``arguments`` can be journaled as they are, within ``max_bytes`` canonical bytes.

    Never raises: anything the walk or canonical JSON refuses becomes a refusal.
    """
    try:
        data = canonical_bytes(arguments)
    except (ValueError, TypeError, RecursionError):
        problem = _first_problem(arguments, values=True)
        return _refused(arguments, problem or (ARGUMENTS_NOT_CANONICAL, "not canonical JSON", None))
    # Canonical, so only the depth is left to check (much cheaper than every value).
    too_deep = _first_problem(arguments, values=False)
    if too_deep is not None:
        return _refused(arguments, too_deep)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if len(data) <= max_bytes:
        return CheckedArguments(digest, None)
    reason = f"{len(data)} bytes, more than max_arguments_bytes ({max_bytes})"
    kept = {"argumentsDigest": digest, "argumentsRefused": {"reason": reason, "bytes": len(data)}}
    return CheckedArguments(digest, Refusal(ARGUMENTS_TOO_LARGE, reason, kept))


def _refused(arguments: Any, problem: tuple[str, str, str | None]) -> CheckedArguments:
    """The refusal of arguments with ``problem``: what, where, and the digest of their text."""
    code, what, path = problem
    reason = what
    if path is not None:
        reason += f" at {path}" if path else " in the arguments object"
    text = as_text(arguments).encode("ascii")
    refused: dict[str, Any] = {"reason": reason, "bytes": len(text)}
    if path is not None:
        refused["path"] = path
    refused["textDigest"] = "sha256:" + hashlib.sha256(text).hexdigest()
    return CheckedArguments(None, Refusal(code, reason, {"argumentsRefused": refused}))


def _first_problem(value: Any, *, values: bool) -> tuple[str, str, str | None] | None:
    """(code, what, JSON Pointer) of the first value nested too deep or, with ``values``, that
    canonical JSON can't write.

    Walks iteratively with one iterator per open container, so no depth the transports deliver
    can raise ``RecursionError`` and a path is only spelled out for the value to blame.
    """
    what = _unwritable(value) if values else None
    if what is not None:
        return ARGUMENTS_NOT_CANONICAL, what, ""
    if not _container(value):
        return None
    path: list[Any] = []
    problem = _key_problem(value, path) if values else None
    open_containers = [_members(value)]
    while problem is None and open_containers:
        for key, child in open_containers[-1]:
            kind = type(child)
            if kind is dict or kind is list or (kind not in _SCALARS and _container(child)):
                if len(child) == 0:
                    continue
                path.append(key)
                if len(path) >= MAX_DEPTH:  # the child's members would sit deeper than MAX_DEPTH
                    first = next(_members(child))[0]
                    return ARGUMENTS_TOO_DEEP, f"nested deeper than {MAX_DEPTH}", _pointer([*path, first])
                problem = _key_problem(child, path) if values else None
                open_containers.append(_members(child))
                break
            what = _unwritable(child) if values else None
            if what is not None:
                return ARGUMENTS_NOT_CANONICAL, what, _pointer([*path, key])
        else:
            open_containers.pop()
            if path:
                path.pop()
    return problem


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _container(item: Any) -> bool:
    return isinstance(item, (dict, list, tuple, Mapping))


def _members(container: Any) -> Iterator[tuple[Any, Any]]:
    """(key, value) of an object's members, (index, value) of an array's items."""
    if isinstance(container, Mapping):
        return iter(container.items())
    return enumerate(container)


def _key_problem(container: Any, path: list[Any]) -> tuple[str, str, str | None] | None:
    """An object key canonical JSON can't write: not a string, or with a lone surrogate."""
    if not isinstance(container, Mapping):
        return None
    for key in container:
        if not isinstance(key, str):
            return ARGUMENTS_NOT_CANONICAL, "a key that is not a string", _pointer(path)
        if not key.isascii() and not _unicode(key):
            return ARGUMENTS_NOT_CANONICAL, "a key with a lone surrogate", _pointer([*path, key])
    return None


def _unwritable(item: Any) -> str | None:
    """What is wrong with one value for canonical JSON (a container's members are walked apart)."""
    kind = type(item)
    if kind is str:
        return None if item.isascii() or _unicode(item) else "a string with a lone surrogate"
    if kind is int:
        return None if -SAFE_INTEGER <= item <= SAFE_INTEGER else "an integer beyond ±(2^53 - 1)"
    if item is None or kind is bool or kind is dict or kind is list:
        return None
    if kind is float:
        return None if item - item == 0 else "a number that is not finite (NaN or Infinity)"
    return _unwritable_subclass(item)


def _unwritable_subclass(item: Any) -> str | None:
    """The same for subclasses and other types (only possible in-process)."""
    if isinstance(item, (bool, Mapping, list, tuple)):
        return None
    if isinstance(item, str):
        return None if _unicode(item) else "a string with a lone surrogate"
    if isinstance(item, int):
        return None if -SAFE_INTEGER <= item <= SAFE_INTEGER else "an integer beyond ±(2^53 - 1)"
    if isinstance(item, float):
        return None if item - item == 0 else "a number that is not finite (NaN or Infinity)"
    if isinstance(item, HugeInteger):
        return "an integer beyond ±(2^53 - 1)"
    return f"a value of type {type(item).__name__}, which is not JSON"


def _pointer(path: list[Any]) -> str:
    """The RFC 6901 JSON Pointer of ``path``, itself canonical JSON: long keys are cut and lone
    surrogates written as ``\\udXXX``, so the pointer names the place without holding the bad value."""
    segments = []
    for part in path:
        segment = str(part).replace("~", "~0").replace("/", "~1")
        if len(segment) > _SEGMENT:
            segment = segment[:_SEGMENT] + "…"
        segments.append(segment.encode("utf-8", "backslashreplace").decode("utf-8"))
    return "".join("/" + segment for segment in segments)


def as_text(value: Any) -> str:
    """``value`` as ASCII JSON text, whatever it holds: what ``textDigest`` and ``bytes`` cover.

    For anything parsed from JSON this is exactly
    ``json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))``: integers in
    full, ``NaN``/``Infinity`` as Python writes them, lone surrogates as ``\\udXXX`` escapes.
    Values too deep for the standard library's writer, and values that are not JSON (only
    possible in-process, written as the string ``"<type name>"``), are written iteratively.
    """
    try:
        return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return _iterative_text(value)


def _iterative_text(value: Any) -> str:
    """What :func:`as_text` writes, one value at a time: any depth, anything at all."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]  # (already text, item)
    while stack:
        is_text, item = stack.pop()
        if is_text:
            out.append(item)
        elif isinstance(item, Mapping):
            members = sorted(((_key_text(key), child) for key, child in item.items()), key=lambda m: m[0])
            out.append("{")
            stack.append((True, "}"))
            for index in reversed(range(len(members))):
                key, child = members[index]
                stack.append((False, child))
                stack.append((True, ("," if index else "") + json.dumps(key) + ":"))
        elif isinstance(item, (list, tuple)):
            out.append("[")
            stack.append((True, "]"))
            for index in reversed(range(len(item))):
                stack.append((False, item[index]))
                if index:
                    stack.append((True, ","))
        else:
            out.append(_scalar_text(item))
    return "".join(out)


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # what json.dumps makes of such a key
    return f"<{type(key).__name__}>"


def _scalar_text(item: Any) -> str:
    if item is None or isinstance(item, (bool, str, float)):
        return json.dumps(item)
    if isinstance(item, int):
        try:
            return int.__repr__(item)
        except ValueError:  # more digits than Python writes; no transport here delivers one
            return json.dumps(f"<integer of {item.bit_length()} bits>")
    if isinstance(item, HugeInteger):
        return item.digits
    return json.dumps(f"<{type(item).__name__}>")
