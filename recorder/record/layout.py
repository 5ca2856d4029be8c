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

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.report import Check, Findings

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


class DuplicateKey(ValueError):
    """An object names one member twice: parsers disagree on which one counts."""


class _Marked(dict[str, Any]):
    """An object that named a member more than once (the last one kept)."""

    duplicates: list[str]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise DuplicateKey("an object names a member twice")
    return value


def _marking(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    marked = _Marked(value)
    seen: set[str] = set()
    marked.duplicates = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return marked


# Exports are read refusing duplicate members everywhere, since canonical JSON never has any.
_decode = json.JSONDecoder(
    parse_int=_number, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates
).raw_decode
_MARKING = json.JSONDecoder(parse_int=_number, parse_constant=_refuse_constant, object_pairs_hook=_marking)


@dataclass(frozen=True)
class Layout:
    """The pieces of a canonically laid-out export."""

    hashed: list[bytes]
    """Each entry's bytes without its hash member: what the Recorder hashed."""
    hash_members: list[str]
    """Each entry's ``"hash":"…"`` member as written."""
    rest: str
    """The file with its entries array emptied, to compare with the canonical form of the rest."""


def read_export(file: bytes | str, found: Findings) -> tuple[Any, list[bytes] | None]:
    """Parse an export once: its JSON value and, when it is laid out canonically, each entry's
    bytes as written (what the Recorder hashed). ``(None, None)`` when it is not JSON at all.

    Bytes that are not exactly the canonical form the Recorder wrote are ``NOT_CANONICAL``: even a
    byte that parses to the same value (``e``/``E``, the case of a hex escape) shows, in an entry
    by changing its hash, elsewhere by this comparison. A member named twice is ``DUPLICATE_KEY``.
    """
    try:
        text = file.decode("utf-8") if isinstance(file, bytes) else file
    except UnicodeDecodeError as error:
        found.add(Check.MALFORMED, None, f"not UTF-8 at byte {error.start}")
        return None, None
    try:
        raw, layout = _top(text)
    except (ValueError, IndexError, RecursionError):
        # Whitespace, another member order, a duplicate, or anything the canonical form never has.
        layout = None
        try:
            if text.startswith("\ufeff"):
                raise ValueError("a byte order mark") from None
            raw = _MARKING.decode(text)
        except (ValueError, RecursionError) as error:
            found.add(Check.MALFORMED, None, f"not a JSON Run Record: {type(error).__name__}: {error}")
            return None, None
        _report_duplicates(raw, found)
    return raw, _stored(raw, layout, found)


def _report_duplicates(raw: Any, found: Findings) -> None:
    """Name each entry (or the file) in which a member is named twice."""
    entries = raw.get("entries") if isinstance(raw, dict) else None
    top = [*(raw.duplicates if isinstance(raw, _Marked) else [])]
    rest = {k: v for k, v in raw.items() if k != "entries"} if isinstance(raw, dict) else raw
    places: list[tuple[str | None, Any]] = [(None, rest)]
    if top:
        found.add(Check.DUPLICATE_KEY, None, f"members named twice: {', '.join(sorted(set(top)))}")
    if isinstance(entries, list):
        places += [(_entry_label(entry, index), entry) for index, entry in enumerate(entries)]
    for label, value in places:
        names = _duplicated(value)
        if names:
            found.add(Check.DUPLICATE_KEY, label, f"members named twice: {', '.join(sorted(set(names)))}")


def _duplicated(value: Any) -> list[str]:
    names: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Marked):
            names += item.duplicates
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return names


def _entry_label(entry: Any, index: int) -> str:
    said = entry.get("id") if isinstance(entry, dict) else None
    return said if isinstance(said, str) and said else f"e{index + 1}"


def _stored(raw: Any, layout: Layout | None, found: Findings) -> list[bytes] | None:
    """Each entry's stored bytes, or None (and ``NOT_CANONICAL``) if the file is not what was written."""
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        return None  # the loader says what is wrong with it
    try:
        canonical = canonical_bytes({**raw, "entries": []}).decode("utf-8")
    except (ValueError, TypeError, RecursionError):
        canonical = None
    if layout is None or layout.rest != canonical:
        found.add(Check.NOT_CANONICAL, None, "the bytes are not the canonical form the Recorder wrote")
        return None
    for index, (entry, member) in enumerate(zip(raw["entries"], layout.hash_members, strict=True)):
        if member != f'"hash":"{entry.get("hash")}"':
            found.add(
                Check.NOT_CANONICAL, _entry_label(entry, index), "the hash member is not written canonically"
            )
    return layout.hashed


def _top(text: str) -> tuple[dict[str, Any], Layout]:
    document: dict[str, Any] = {}
    hashed: list[bytes] = []
    members: list[str] = []
    cut: tuple[int, int] | None = None
    i = _expect(text, 0, "{")
    while True:
        key, i = _key(text, i)
        if key in document:
            raise DuplicateKey(f"duplicate member {key!r}")
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
            raise DuplicateKey(f"duplicate member {key!r}")
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
