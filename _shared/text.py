"""Text someone else wrote, made safe to print on a terminal line.

A tool server, an agent or a store can put anything in a summary, a reason or an argument: a line
break that starts a fake "step 2" line, an ANSI escape that recolours or erases what follows, a bidi
override that makes ``gpj.exe`` read ``exe.jpg``. :func:`shown` writes every such character as a
visible escape, so one value stays on one line and reads as what it is. Everything else (accents,
CJK, emoji) is left as it is. Pages need none of this: their templates escape every value.

JSON printed for people (``show --json``, ``explain --json``) gets the same care in JSON's own
terms (:func:`json_for_people`): still valid JSON with the same values, every control and format
character written as a ``\\uXXXX`` escape.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Final

BIDI_CONTROLS: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Characters that change the direction text is laid out in (Unicode's bidi formatting controls)."""

_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def unsafe(char: str) -> bool:
    """Whether ``char`` could change how the rest of a terminal line reads (or start a new one):
    C0 and C1 controls (ESC and CSI start ANSI escapes), DEL, line and paragraph separators,
    bidi controls, and lone surrogates (which no terminal can print)."""
    return char in BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs")


def shown(text: str) -> str:
    """``text`` with every :func:`unsafe` character written as an escape (``\\n``, ``\\x1b``,
    ``\\u202e``): what a person reads is exactly what was written, on one line."""
    if text.isprintable():  # the common case: no control, separator or format character at all
        return text
    return "".join(_escaped(char) if unsafe(char) else char for char in text)


def shown_lines(lines: list[str]) -> str:
    """Lines joined for printing, each made safe first: a value can't add a line of its own."""
    return "\n".join(shown(line) for line in lines)


def _escaped(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


HIDDEN_IN_JSON: Final = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
"""Categories :func:`json_for_people` escapes: controls, format characters (bidi controls, zero-width
ones, tags), line and paragraph separators, and lone surrogates."""

_NOT_PLAIN_ASCII: Final = re.compile(r"[^\n\x20-\x7e]")
"""What may need an escape in ``json.dumps`` output: DEL and everything past ASCII. A raw line break
there is indentation (a line break inside a string is already ``\\n``), so it stays."""


def json_for_people(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``value`` as JSON to print on a terminal: ``json.dumps(value, ensure_ascii=False)`` (so "Zoë"
    stays readable) with every character of :data:`HIDDEN_IN_JSON` written as ``\\uXXXX`` (a
    surrogate pair past U+FFFF). Any JSON parser reads back the same value; no character can move the
    cursor, start a line or turn the text around. Not for bytes that are hashed or signed: those are
    RFC 8785's (``_shared/canonical.py``)."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    return _NOT_PLAIN_ASCII.sub(_json_escaped, text)


def _json_escaped(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in HIDDEN_IN_JSON:
        return char
    code = ord(char)
    if code > 0xFFFF:  # JSON escapes only 16-bit units: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"
