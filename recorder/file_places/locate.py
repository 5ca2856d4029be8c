"""Where each key of a JSON document sits (line, column), so errors can name the line.

The standard ``json`` module keeps no positions, so this walks the text once, reusing the
standard decoder for strings and scalars. It also refuses what ``json`` silently accepts:
duplicate keys (the last would win), ``NaN``/``Infinity`` and integers beyond 2^53 - 1 (which JSON
readers do not keep exactly; past 4,300 digits Python's ``int`` refuses to read them at all).
:func:`located` is the way in for a file: it bounds the nesting and checks the syntax first.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field

from hatp_journal._shared.files import FileProblem, check_nesting

Path = tuple[str | int, ...]
_WHITESPACE = " \t\n\r"
SAFE_INTEGER = 2**53 - 1


class _HugeInteger(ValueError):
    """An integer literal beyond :data:`SAFE_INTEGER`, met while parsing."""


def _integer(literal: str) -> int:
    """``int(literal)``, refusing one beyond :data:`SAFE_INTEGER` before converting a long one."""
    if len(literal.lstrip("-")) > len(str(SAFE_INTEGER)) or abs(value := int(literal)) > SAFE_INTEGER:
        raise _HugeInteger(literal)
    return value


_DECODER = json.JSONDecoder(parse_int=_integer)


@dataclass(frozen=True)
class Position:
    """A 1-based line and column."""

    line: int
    column: int


class LocateError(ValueError):
    """The document is valid JSON syntax but not acceptable (duplicate key, NaN); carries its position."""

    def __init__(self, message: str, position: Position) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


@dataclass
class KeyMap:
    """Positions by path: an object member at its key, an array element at its first character."""

    text: str
    positions: dict[Path, Position] = field(default_factory=dict)
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._line_starts = [0] + [i + 1 for i, char in enumerate(self.text) if char == "\n"]

    def position_of(self, path: Path) -> Position:
        """The position of ``path``, or of its closest existing ancestor (e.g. for a missing key)."""
        for end in range(len(path), -1, -1):
            found = self.positions.get(path[:end])
            if found is not None:
                return found
        return Position(1, 1)

    def at(self, index: int) -> Position:
        """The position of a character offset."""
        line = bisect.bisect_right(self._line_starts, index)
        return Position(line, index - self._line_starts[line - 1] + 1)


def located(text: str, source: str) -> KeyMap:
    """Check that ``text`` is one acceptable JSON document and map its keys; ``source`` names it.

    Nesting is bounded first (:func:`~hatp_journal._shared.files.check_nesting`): both the standard
    parser and :func:`locate` recurse once per level. Raises :class:`LocateError` for anything wrong.
    """
    try:
        check_nesting(text, source, syntax="json")
    except FileProblem as problem:
        raise LocateError(problem.message, Position(problem.line or 1, problem.column)) from None
    try:
        json.loads(text, parse_int=_integer)  # the standard parser's syntax errors carry the best messages
    except json.JSONDecodeError as error:
        raise LocateError(f"JSON syntax: {error.msg}", Position(error.lineno, error.colno)) from None
    except _HugeInteger:
        pass  # locate() finds where it is
    return locate(text)


def locate(text: str) -> KeyMap:
    """Map every key of ``text`` (which must already parse as JSON) to its position.

    Raises :class:`LocateError` for a duplicate key or a non-finite number.
    """
    keys = KeyMap(text)
    end = _value(keys, _skip(text, 0), ())
    keys.positions.setdefault((), keys.at(_skip(text, 0)))
    if _skip(text, end) != len(text):  # json.loads would have refused this already
        raise LocateError("extra data after the JSON document", keys.at(_skip(text, end)))
    return keys


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _value(keys: KeyMap, index: int, path: Path) -> int:
    """Record positions inside the value starting at ``index``; return the index after it."""
    text = keys.text
    if text.startswith("{", index):
        return _object(keys, index, path)
    if text.startswith("[", index):
        return _array(keys, index, path)
    try:
        value, end = _DECODER.raw_decode(text, index)
    except _HugeInteger as huge:
        digits = str(huge)
        shown = digits if len(digits) <= 30 else f"{digits[:20]}… ({len(digits)} characters)"
        dotted = ".".join(str(part) for part in path) or "(top level)"
        said = (
            f"{dotted}: {shown} is an integer beyond 2^53 - 1 ({SAFE_INTEGER}), the most JSON keeps exactly"
        )
        raise LocateError(said, keys.at(index)) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise LocateError(f"{text[index:end]} is not a number JSON allows", keys.at(index))
    return int(end)


def _object(keys: KeyMap, index: int, path: Path) -> int:
    text = keys.text
    seen: set[str] = set()
    index = _skip(text, index + 1)
    if text.startswith("}", index):
        return index + 1
    while True:
        start = index
        name, index = _DECODER.raw_decode(text, index)  # a key is a JSON string
        if name in seen:
            raise LocateError(f"duplicate key {name!r}", keys.at(start))
        seen.add(name)
        keys.positions[(*path, name)] = keys.at(start)
        index = _skip(text, _skip(text, index) + 1)  # past the colon
        index = _skip(text, _value(keys, index, (*path, name)))
        if text.startswith("}", index):
            return index + 1
        index = _skip(text, index + 1)  # past the comma


def _array(keys: KeyMap, index: int, path: Path) -> int:
    text = keys.text
    index = _skip(text, index + 1)
    if text.startswith("]", index):
        return index + 1
    item = 0
    while True:
        keys.positions[(*path, item)] = keys.at(index)
        index = _skip(text, _value(keys, index, (*path, item)))
        if text.startswith("]", index):
            return index + 1
        index = _skip(text, index + 1)
        item += 1
