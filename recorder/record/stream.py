"""Reading an exported file one entry at a time, so a record of any length is verified in little memory.

The members other than ``entries`` (run, checkpoints, keys, directories) are read first: those
before the entries from the start of the file, those after them from its end. Then the entries
are read in order, one at a time, each with the bytes the Recorder hashed (see ``layout.py``).
This reads exactly what :func:`layout.read_export` reads from a file laid out as the Recorder
writes it, and finds the same problems with it, but for an entry longer than :data:`MAX_ENTRY`:
that one is skipped unread. Anything else (another layout, not JSON, not UTF-8) raises
:class:`NotLaidOut`: the caller then reads the file whole, the slow way, which says precisely
what is wrong with it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.layout import (
    ENTRY_KEYS,
    DuplicateKey,
    _decode,
    _entry_label,
    _expect,
    _key,
    _number,
    _object,
)
from hatp_journal.recorder.record.report import Check, Findings

CHUNK = 1 << 20
"""Bytes read at a time."""
MAX_ENTRY = 8 << 20
"""Characters an entry may take. A longer one is never held whole: it is skipped and ``MALFORMED``."""
MAX_HEADER = 64 << 20
"""Characters the members other than entries may take, together."""
_TAIL_WINDOW = 64 << 10
"""Bytes read from the end of the file to find where the entries end (more if needed)."""

_PARSE_ERRORS = (ValueError, IndexError, RecursionError)
"""What parsing text that is not the canonical layout raises (``IndexError``: the text ran out)."""

_STRING = r'"([^"\\\x00-\x1f]*)"'
_ENTRY_TAIL = re.compile(
    rf',"id":{_STRING},"kind":{_STRING},"prevHash":{_STRING},"run":{_STRING},'
    rf'"seq":(-?(?:0|[1-9][0-9]*)),"time":{_STRING}}}'
)
"""An entry's members after its hash as the Recorder writes them: strings without escapes, an integer seq."""


class NotLaidOut(Exception):
    """The file is not laid out as the Recorder writes it (``at``: about where, in bytes)."""

    def __init__(self, why: str, at: int | None = None, *, not_utf8: bool = False) -> None:
        super().__init__(why)
        self.why, self.at, self.not_utf8 = why, at, not_utf8


@dataclass(frozen=True)
class TooLong:
    """An entry longer than :data:`MAX_ENTRY` characters: skipped unread, reported ``MALFORMED``."""

    chars: int


class _NotAnEntry(ValueError):
    """A whole object, not laid out as an entry."""


class _TextTooLong(Exception):
    """More text than allowed was read without the value ending."""


class _Text:
    """The file's text from byte ``start`` to ``end``, decoded and read a chunk at a time.

    ``text[at:]`` is what is not parsed yet. What is parsed is dropped when more is read, unless
    ``keep`` (the members before the entries, compared as written with their canonical form).
    """

    def __init__(self, file: BinaryIO, start: int, end: int, *, keep: bool = False) -> None:
        file.seek(start)
        self.file, self.keep = file, keep
        self.read_to, self.end = start, end
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.at = 0
        self.byte = start
        """The file offset of ``text[0]``."""

    @property
    def ended(self) -> bool:
        return self.read_to == self.end

    def more(self, size: int = CHUNK) -> None:
        """Read about ``size`` more bytes; :class:`NotLaidOut` if there are none."""
        if self.ended:
            raise NotLaidOut("the file ends too soon", self.end)
        data = self.file.read(min(size, self.end - self.read_to))
        if not data:
            raise NotLaidOut("the file changed while it was read", self.read_to)
        decoded_to = self.read_to - len(self.decoder.getstate()[0])  # the offset where text ends
        self.read_to += len(data)
        try:
            decoded = self.decoder.decode(data, final=self.ended)
        except UnicodeDecodeError as error:
            raise NotLaidOut("not UTF-8", decoded_to + error.start, not_utf8=True) from None
        if not self.keep:
            self.text = self.text[self.at :]
            self.byte, self.at = decoded_to - _utf8_size(self.text), 0
        self.text += decoded

    def char(self) -> str:
        """The next character, not consumed."""
        while self.at >= len(self.text):
            self.more()
        return self.text[self.at]

    def expect(self, char: str) -> None:
        if self.char() != char:
            raise NotLaidOut(f"expected {char!r}", self.offset())
        self.at += 1

    def parse(self, read: Callable[[str, int], tuple[Any, int]], limit: int) -> Any:
        """``read(text, at)`` -> (value, end) at the current place, reading more text as needed.

        A value is taken only once the text goes on after it (a number cut off by the end of a
        chunk would parse as a shorter one). :class:`_TextTooLong` past ``limit`` characters.
        """
        while True:
            try:
                value, end = read(self.text, self.at)
            except (DuplicateKey, _NotAnEntry, RecursionError) as error:  # whole, and wrong
                raise NotLaidOut(f"{type(error).__name__}: {error}", self.offset()) from None
            except (ValueError, IndexError) as error:  # broken, or cut off by the end of the text read
                if self.ended:
                    raise NotLaidOut(f"{type(error).__name__}: {error}", self.offset()) from None
            else:
                if end < len(self.text) or self.ended:
                    self.at = end
                    return value
            pending = len(self.text) - self.at
            if pending > limit:
                raise _TextTooLong
            # Doubling (a long value is parsed a few times, not once per chunk), never far past the limit.
            self.more(min(max(CHUNK, pending), limit + 1 - pending))

    def offset(self) -> int:
        """The file offset of the current place."""
        return self.byte + _utf8_size(self.text[: self.at])


class ExportReader:
    """A canonically laid-out export, read from a seekable binary file one entry at a time.

    ``header`` is the file's JSON object with its entries left out; ``findings`` are the
    ``NOT_CANONICAL`` problems of its layout, in the order :func:`layout.read_export` reports
    them (complete once :meth:`entries` is exhausted). :class:`NotLaidOut` from the constructor
    or from :meth:`entries` means the file must be read the slow way instead.
    """

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.size = file.seek(0, 2)
        self.findings = Findings()
        before, written_before, self.entries_at = self._before_entries()
        after, written_after, self.entries_end = self._after_entries()
        for name in after:
            if name in before:
                raise NotLaidOut(f"member {name!r} twice")
        self.header = {**before, **after}
        try:
            canonical: str | None = canonical_bytes({**self.header, "entries": []}).decode("utf-8")
        except (ValueError, TypeError, RecursionError):
            canonical = None
        self.canonical = canonical == written_before + "[]" + written_after
        if not self.canonical:
            self.findings.add(
                Check.NOT_CANONICAL, None, "the bytes are not the canonical form the Recorder wrote"
            )

    def _before_entries(self) -> tuple[dict[str, Any], str, int]:
        """The members before ``entries``, their text as written, and the offset of its ``[``."""
        text = _Text(self.file, 0, self.size, keep=True)
        members: dict[str, Any] = {}
        text.expect("{")
        while True:
            key = self._header_value(text, _key)
            if key in members:
                raise NotLaidOut(f"member {key!r} twice", text.offset())
            if key == "entries":
                if text.char() != "[":
                    raise NotLaidOut("entries is not a list", text.offset())
                return members, text.text[: text.at], text.offset()
            members[key] = self._header_value(text, _decode)
            text.expect(",")  # a "}" here: a file without entries

    def _header_value(self, text: _Text, read: Callable[[str, int], tuple[Any, int]]) -> Any:
        try:
            return text.parse(read, MAX_HEADER - text.at)
        except _TextTooLong:
            raise NotLaidOut("the members other than entries are too long", text.offset()) from None

    def _after_entries(self) -> tuple[dict[str, Any], str, int]:
        """The members after ``entries``, their text as written, and the offset of its ``]``.

        Read from the end of the file: of the ``]`` that the rest of the file follows as
        top-level members, the last. The entries read later must end exactly there.
        """
        window = _TAIL_WINDOW
        while True:
            start = max(self.entries_at, self.size - window)
            self.file.seek(start)
            data = self.file.read(self.size - start)
            skip = 0
            while start > self.entries_at and skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
                skip += 1  # the window began inside a character
            try:
                text = data[skip:].decode("utf-8")
            except UnicodeDecodeError as error:
                raise NotLaidOut("not UTF-8", start + skip + error.start, not_utf8=True) from None
            close = len(text)
            while (close := text.rfind("]", 0, close)) >= 0:
                try:
                    members = _members_after(text, close + 1)
                except _PARSE_ERRORS:
                    continue
                return members, text[close + 1 :], start + skip + _utf8_size(text[:close])
            if start == self.entries_at or window > MAX_HEADER:
                raise NotLaidOut("no end of the entries is followed by the rest of a Run Record", start)
            window *= 4

    def entries(self) -> Iterator[tuple[Any, bytes | None]]:
        """Each entry (or :class:`TooLong`) with the bytes the Recorder hashed (None when the file
        is not canonical: then entries are re-serialized to be hashed)."""
        text = _Text(self.file, self.entries_at, self.entries_end + 1)
        text.expect("[")
        index = 0
        while text.char() != "]":
            if index:
                text.expect(",")
            try:
                entry, hashed, member = text.parse(_entry, MAX_ENTRY)
            except _TextTooLong:
                yield TooLong(_skip_object(text)), None
            else:
                if self.canonical and member != f'"hash":"{entry.get("hash")}"':
                    label = _entry_label(entry, index)
                    self.findings.add(
                        Check.NOT_CANONICAL, label, "the hash member is not written canonically"
                    )
                yield entry, hashed.encode("utf-8") if self.canonical else None
            index += 1
        if text.offset() != self.entries_end:
            raise NotLaidOut("the entries end elsewhere than the rest of the file begins", text.offset())


def _members_after(text: str, i: int) -> dict[str, Any]:
    """The members from ``i`` (just after the entries) to the end of the file, as ``_top`` reads them."""
    members: dict[str, Any] = {}
    while not (text[i] == "}" and i + 1 == len(text)):
        i = _expect(text, i, ",")
        key, i = _key(text, i)
        if key in members or key == "entries":
            raise DuplicateKey(f"duplicate member {key!r}")
        members[key], i = _decode(text, i)
    return members


def _entry(text: str, i: int) -> tuple[tuple[dict[str, Any], str, str], int]:
    """The entry at ``i`` laid out canonically: (its value, the text hashed, its hash member as
    written) and where it ends. As ``layout._entries`` reads one, with a quicker road for an
    entry as the Recorder writes it: one decode of the body, the rest matched at once."""
    if text.startswith('{"body":', i):
        body, j = _decode(text, i + 8)
        if text.startswith(',"hash":', j):
            digest, k = _decode(text, j + 8)
            tail = _ENTRY_TAIL.match(text, k)
            if tail is not None:
                entry_id, kind, prev_hash, run, seq, time = tail.groups()
                entry = {
                    "body": body,
                    "hash": digest,
                    "id": entry_id,
                    "kind": kind,
                    "prevHash": prev_hash,
                    "run": run,
                    "seq": _number(seq),
                    "time": time,
                }
                end = tail.end()
                return (entry, text[i:j] + text[k:end], text[j + 1 : k]), end
    entry, spans, end = _object(text, i)
    if tuple(spans) != ENTRY_KEYS:
        raise _NotAnEntry("entry members are not in canonical order")
    begin, stop = spans["hash"]
    return (entry, text[i : begin - 1] + text[stop:end], text[begin:stop]), end


_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
"""The inside of a JSON string up to its closing quote (or a backslash that ends the text read)."""
_STRUCTURE = re.compile(r'["\[\]{}]')
_SCAN_STEP = 1 << 16


def _skip_object(text: _Text) -> int:
    """Skip the object at the current place, reading on without keeping what is read; return its
    length in characters. :class:`NotLaidOut` if it is not an object, never ends, or is not
    longer than :data:`MAX_ENTRY` (then it was cut short by something else: it is not an entry).
    """
    if text.char() != "{":
        raise NotLaidOut("an entry is not an object", text.offset())
    depth, in_string, escaped, length = 0, False, False, 0
    while True:
        chunk, i = text.text, text.at
        while i < len(chunk):
            if escaped:  # the chunk before ended with the backslash
                i, escaped = i + 1, False
            elif in_string:
                stop = min(len(chunk), i + _SCAN_STEP)  # a bounded match: the regex stack stays small
                i = _STRING_BODY.match(chunk, i, stop).end()  # type: ignore[union-attr]  # (it matches "")
                if i < stop:
                    escaped, in_string = chunk[i] == "\\", chunk[i] != '"'
                    i += 1
            else:
                found = _STRUCTURE.search(chunk, i)
                if found is None:
                    break
                char, i = found.group(), found.end()
                if char == '"':
                    in_string = True
                elif char in "[{":
                    depth += 1
                elif (depth := depth - 1) == 0:
                    length += i - text.at
                    text.at = i
                    if length <= MAX_ENTRY:
                        raise NotLaidOut("an entry that is not laid out as one", text.offset())
                    return length
        length += len(chunk) - text.at
        text.at = len(chunk)
        text.more()


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
