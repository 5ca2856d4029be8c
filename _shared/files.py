"""Reading the files people write by hand (configuration, policy, directory, keys) without surprises.

Every loader reads through here, so each refuses the same bad files the same way: a folder or an
unreadable file, an empty file, one larger than its limit, bytes that are not UTF-8 (with the line
and byte offset), and JSON or TOML nested deeper than :data:`MAX_NESTING`, which is refused before a
parser recurses into it (the standard parsers raise ``RecursionError`` there, which is no
``ValueError``). A leading UTF-8 byte order mark is accepted and dropped: editors write one, and it
changes nothing a parser reads.
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from typing import Any, Literal

MAX_TEXT_BYTES = 10 * 1024 * 1024
"""The largest configuration, policy, directory or attestation file read (10 MiB)."""
MAX_KEY_BYTES = 64 * 1024
"""The largest key file read (64 KiB; an Ed25519 key file is under 200 bytes)."""
MAX_NESTING = 64
"""The deepest nesting of arrays and objects (or TOML tables) accepted; real files need under 10."""

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark: accepted at the start of a file, and dropped."""

# A string, so brackets inside it don't count; an unterminated one ends at its line (the parser
# then reports it). TOML adds literal and multi-line strings, comments, and the dots of its keys.
_JSON_TOKENS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|[\[\]{}]')
_JSON_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?(?:"""|\Z)|\'\'\'.*?(?:\'\'\'|\Z)'
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|\'[^\'\n]*\'?|#[^\n]*|[\[\]{}.=,\n]',
    re.DOTALL,
)


class FileCode(StrEnum):
    """Why a file could not be read; stable, for tests and callers to tell cases apart."""

    MISSING = "MISSING"
    NOT_A_FILE = "NOT_A_FILE"
    CANNOT_READ = "CANNOT_READ"
    TOO_LARGE = "TOO_LARGE"
    EMPTY = "EMPTY"
    NOT_UTF8 = "NOT_UTF8"
    TOO_DEEP = "TOO_DEEP"


class FileProblem(ValueError):
    """A file that can't be read as text; ``str()`` is ``path:line:column: message`` (or ``path: message``).

    Loaders turn it into their own error class (``ConfigError``, ``PolicyFileError``, …).
    """

    def __init__(
        self,
        code: FileCode,
        path: str | os.PathLike[str],
        message: str,
        line: int | None = None,
        column: int = 1,
    ) -> None:
        self.code = code
        self.path = str(path)
        self.message = message
        self.line = line
        self.column = column
        where = f"{self.path}:{line}:{column}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def read_bytes(path: str | os.PathLike[str], *, limit: int) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them; raises :class:`FileProblem`."""
    try:
        with open(path, "rb") as stream:  # never more than the limit, whatever the file's size
            data = stream.read(limit + 1)
    except FileNotFoundError:
        raise FileProblem(FileCode.MISSING, path, "no such file") from None
    except IsADirectoryError:
        raise FileProblem(FileCode.NOT_A_FILE, path, "is a folder, not a file") from None
    except OSError as error:  # no permission, a broken device, …
        raise FileProblem(FileCode.CANNOT_READ, path, f"cannot read it: {error.strerror or error}") from None
    if len(data) > limit:
        raise FileProblem(FileCode.TOO_LARGE, path, f"larger than {_size(limit)}, the limit for this file")
    if not data.removeprefix(BOM).strip():
        raise FileProblem(FileCode.EMPTY, path, "the file is empty")
    return data


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path`` (a leading byte order mark dropped); raises :class:`FileProblem`."""
    data = read_bytes(path, limit=limit)
    start = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = start + error.start
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        message = f"byte 0x{data[offset]:02x} at offset {offset} is not UTF-8 (save the file as UTF-8)"
        raise FileProblem(FileCode.NOT_UTF8, path, message, line, column) from None


def check_nesting(
    text: str, path: str | os.PathLike[str], *, syntax: Literal["json", "toml"], limit: int = MAX_NESTING
) -> None:
    """Refuse ``text`` if it nests deeper than ``limit``, naming the line of the first level too deep.

    Only counts, never parses: run it before the parser, which recurses once per bracket. In TOML each
    dot of a key (``a.b.c = 1``, ``[a.b.c]``) counts as a level too: ``tomllib`` takes seconds and
    gigabytes for a key a few thousand dots long.
    """
    if syntax == "json" and _json_within(text, limit):
        return
    depth = dots = 0
    for token in (_JSON_TOKENS if syntax == "json" else _TOML_TOKENS).finditer(text):
        found = token.group()
        if found in ("[", "{"):
            depth, dots = depth + 1, 0
        elif found in ("]", "}"):
            depth, dots = max(depth - 1, 0), 0  # a stray closer is the parser's to report
        elif found == ".":
            dots += 1
        elif found in ("=", ",", "\n"):  # a key's dots end here
            dots = 0
        if depth + dots > limit:
            index = token.start()
            line = text.count("\n", 0, index) + 1
            column = index - (text.rfind("\n", 0, index) + 1) + 1
            raise FileProblem(FileCode.TOO_DEEP, path, f"nested deeper than {limit} levels", line, column)


def _json_within(text: str, limit: int) -> bool:
    """True if ``text``'s brackets balance within ``limit`` levels; found with regular expressions
    (a directory is read at every decision, and a loop over its characters costs milliseconds).

    Each pass removes the innermost pairs, so ``limit`` passes empty any balanced text that deep.
    False for anything else, unbalanced text included, which the exact scan then looks at.
    """
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(limit):
        if not brackets:
            return True
        shorter = _EMPTY_PAIR.sub("", brackets)
        if shorter == brackets:
            return False
        brackets = shorter
    return not brackets


def too_deep(data: Any, *, limit: int = MAX_NESTING) -> tuple[str | int, ...] | None:
    """The first path into ``data`` (parsed JSON or TOML) longer than ``limit``, or None.

    For parsed TOML: a table header (``[a.b.c]``) and a dotted key under it (``d.e.f = 1``) nest
    further together than either does alone. Walks without recursing.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > limit:
            return path
        if isinstance(value, dict):
            stack.extend((item, (*path, key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
    return None


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"
