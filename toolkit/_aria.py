"""Read Playwright's ARIA snapshots (its YAML rendering of the accessibility tree) as plain nodes.

Playwright writes each node on one line as ``- role "name" [attributes]: text``. The name is a
JSON string; a key YAML would misread (a name containing ": " or " #") is single-quoted as a
whole, and text values are double-quoted with C-like escapes. Parsing these rules exactly, rather
than matching lines with a regex, keeps names like ``Hooli: "West" #1`` intact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_LINE = re.compile(r"^(?P<indent>(?:  )*)- (?P<item>.*)$")
_ROLE = re.compile(r"[A-Za-z][\w-]*")
_ATTRIBUTES = re.compile(r"(?: \[[^\]]*\])*")  # e.g. [level=1] [checked]
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AriaSnapshotError(ValueError):
    """A snapshot line that is not in the form Playwright writes."""


@dataclass(frozen=True)
class AriaNode:
    """One node of the accessibility tree: its role, accessible name, inline text and children."""

    role: str
    name: str = ""
    text: str | None = None
    children: tuple[AriaNode, ...] = ()

    @property
    def label(self) -> str:
        """What a person reads for this node: its accessible name, else its text."""
        return self.name or (self.text or "")

    def walk(self) -> Iterator[AriaNode]:
        """This node and every node below it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class _Open:
    depth: int
    role: str
    name: str
    text: str | None
    children: list[AriaNode | _Open] = field(default_factory=list)

    def close(self) -> AriaNode:
        kids = tuple(child.close() if isinstance(child, _Open) else child for child in self.children)
        return AriaNode(self.role, self.name, self.text, kids)


def parse_aria_snapshot(snapshot: str) -> list[AriaNode]:
    """The top-level nodes of ``locator.aria_snapshot()``'s text.

    Properties such as ``/url`` are dropped; ``- text: ...`` lines become ``text`` nodes.
    Raises :class:`AriaSnapshotError` on a line Playwright would not write.
    """
    roots: list[_Open] = []
    stack: list[_Open] = []
    for number, line in enumerate(snapshot.splitlines(), start=1):
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            raise AriaSnapshotError(f"line {number} is not a snapshot item: {line!r}")
        depth = len(match["indent"]) // 2
        item = match["item"]
        while stack and stack[-1].depth >= depth:
            stack.pop()
        if item.startswith("/"):
            continue  # a property of the parent (/url, /placeholder): not a visible value
        if depth > (stack[-1].depth + 1 if stack else 0):
            raise AriaSnapshotError(f"line {number} is indented below no parent: {line!r}")
        node = _parse_item(item, depth, number)
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return [root.close() for root in roots]


def _parse_item(item: str, depth: int, number: int) -> _Open:
    key, rest = _split_key(item, number)
    value = None
    if rest.startswith(": "):
        value = _unquote_value(rest[2:], number)
    elif rest not in ("", ":"):
        raise AriaSnapshotError(f"line {number}: unexpected {rest!r} after the key")
    role_match = _ROLE.match(key)
    if role_match is None:
        raise AriaSnapshotError(f"line {number}: no role in {key!r}")
    role, name = role_match.group(), ""
    after_role, attributes_at = key[role_match.end() :], 0
    if after_role.startswith(' "'):
        try:
            decoded, attributes_at = json.JSONDecoder().raw_decode(after_role, 1)
        except json.JSONDecodeError as error:
            raise AriaSnapshotError(f"line {number}: unreadable name in {key!r}: {error}") from None
        name = str(decoded)
    if not _ATTRIBUTES.fullmatch(after_role[attributes_at:]):
        raise AriaSnapshotError(f"line {number}: unexpected {after_role[attributes_at:]!r} in {key!r}")
    return _Open(depth, role, name, value)


def _split_key(item: str, number: int) -> tuple[str, str]:
    """The key (unquoted) and what follows it (``""``, ``":"`` or ``": value"``)."""
    if not item.startswith("'"):
        # Unquoted keys never contain ": " or end in ":" (Playwright quotes those).
        at = item.find(": ")
        if at >= 0:
            return item[:at], item[at:]
        return (item[:-1], ":") if item.endswith(":") else (item, "")
    chars: list[str] = []
    i = 1
    while i < len(item):
        if item[i] == "'":
            if item[i + 1 : i + 2] != "'":
                return "".join(chars), item[i + 1 :]
            i += 1  # '' is one quote inside a single-quoted YAML scalar
        chars.append(item[i])
        i += 1
    raise AriaSnapshotError(f"line {number}: unterminated quoted key")


def _unquote_value(value: str, number: int) -> str:
    if not value.startswith('"'):
        return value
    if len(value) < 2 or not value.endswith('"'):
        raise AriaSnapshotError(f"line {number}: unterminated quoted text")
    body, chars, i = value[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            chars.append(char)
            i += 1
            continue
        code = body[i + 1 : i + 2]
        width = {"x": 2, "u": 4}.get(code)
        if width is not None:
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise AriaSnapshotError(f"line {number}: bad escape \\{code}{digits}")
            chars.append(chr(int(digits, 16)))
            i += 2 + width
        elif code in _ESCAPES:
            chars.append(_ESCAPES[code])
            i += 2
        else:
            raise AriaSnapshotError(f"line {number}: unknown escape \\{code}")
    return "".join(chars)
