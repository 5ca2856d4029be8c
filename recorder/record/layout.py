"""Where each entry's stored bytes sit inside an exported file.

An export is canonical JSON, so each entry appears in it as exactly the bytes the Recorder
hashed, plus its ``"hash"`` member. Cutting that member out lets the verifier hash the file's
own bytes instead of re-serializing every entry (the slow part of verifying), and any byte
that differs from what the Recorder wrote, even one that parses to the same value, changes a
hash. The file is parsed once, by the same walk. Anything not laid out canonically yields no
layout and is verified the slow way (re-serializing each entry).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ENTRY_KEYS = ("body", "hash", "id", "kind", "prevHash", "run", "seq", "time")
"""An entry's members in RFC 8785 order; ``hash`` is the one not hashed."""


SAFE_INTEGER = 2**53 - 1


def parse_json(text: str | bytes) -> Any:
    """Parse JSON as RFC 8785 reads it: numbers are doubles, NaN and Infinity are refused.

    An integral double beyond 2^53 is written by RFC 8785 without a fraction
    (``52091374066099100``); reading it back as a Python int would change its value and make it
    unserializable, so it is read back as the float it was.
    """
    # What json.loads does before decoding, with a decoder made once instead of on every call.
    if isinstance(text, (bytes, bytearray)):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def _number(text: str) -> int | float:
    value = int(text)
    return value if -SAFE_INTEGER <= value <= SAFE_INTEGER else float(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_int=_number, parse_constant=_refuse_constant)
_decode = _DECODER.raw_decode


@dataclass(frozen=True)
class Layout:
    """The pieces of a canonically laid-out export."""

    hashed: list[bytes]
    """Each entry's bytes without its hash member: what the Recorder hashed."""
    hash_members: list[str]
    """Each entry's ``"hash":"…"`` member as written."""
    rest: str
    """The file with its entries array emptied, to compare with the canonical form of the rest."""


def read_export(text: str) -> tuple[Any, Layout | None]:
    """Parse an export once; with its layout when it is laid out canonically, else ``None``.

    Raises ``ValueError`` (or ``RecursionError``) when the text is not JSON at all.
    """
    try:
        return _top(text)
    except (ValueError, IndexError, RecursionError):
        # Whitespace, another member order, or anything else the canonical form never produces.
        return parse_json(text), None


def _top(text: str) -> tuple[dict[str, Any], Layout]:
    document: dict[str, Any] = {}
    hashed: list[bytes] = []
    members: list[str] = []
    cut: tuple[int, int] | None = None
    i = _expect(text, 0, "{")
    while True:
        key, i = _key(text, i)
        if key == "entries":
            start = i
            document[key], hashed, members, i = _entries(text, i)
            cut = (start, i)
        else:
            document[key], i = _decode(text, i)
        if text[i] == "}" and i + 1 == len(text) and cut is not None:
            return document, Layout(hashed, members, text[: cut[0]] + "[]" + text[cut[1] :])
        i = _expect(text, i, ",")


def _entries(text: str, i: int) -> tuple[list[dict[str, Any]], list[bytes], list[str], int]:
    entries: list[dict[str, Any]] = []
    hashed: list[bytes] = []
    members: list[str] = []
    i = _expect(text, i, "[")
    if text[i] == "]":
        return entries, hashed, members, i + 1
    while True:
        start = i
        entry, spans, i = _object(text, i)
        if tuple(spans) != ENTRY_KEYS:
            raise ValueError("entry members are not in canonical order")
        begin, end = spans["hash"]
        # Drop ',"hash":"…"' (the comma before it included): what remains is what was hashed.
        hashed.append((text[start : begin - 1] + text[end:i]).encode("utf-8"))
        members.append(text[begin:end])
        entries.append(entry)
        if text[i] == "]":
            return entries, hashed, members, i + 1
        i = _expect(text, i, ",")


def _object(text: str, i: int) -> tuple[dict[str, Any], dict[str, tuple[int, int]], int]:
    """The object at ``i``, where each member starts and ends, and the index after it."""
    value: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    i = _expect(text, i, "{")
    while True:
        begin = i
        key, i = _key(text, i)
        if key in value:
            raise ValueError(f"duplicate member {key!r}")
        value[key], i = _decode(text, i)
        spans[key] = (begin, i)
        if text[i] == "}":
            return value, spans, i + 1
        i = _expect(text, i, ",")


def _key(text: str, i: int) -> tuple[str, int]:
    key, i = _decode(text, i)
    if not isinstance(key, str):
        raise ValueError("object keys are strings")
    return key, _expect(text, i, ":")


def _expect(text: str, i: int, char: str) -> int:
    if text[i] != char:
        raise ValueError(f"expected {char!r} at {i}")
    return i + 1
