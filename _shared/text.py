"""Text someone else wrote, made safe to print on a terminal line.

A tool server, an agent or a store can put anything in a summary, a reason or an argument: a line
break that starts a fake "step 2" line, an ANSI escape that recolours or erases what follows, a bidi
override that makes ``gpj.exe`` read ``exe.jpg``. :func:`shown` writes every such character as a
visible escape, so one value stays on one line and reads as what it is. Everything else (accents,
CJK, emoji) is left as it is. Pages need none of this: their templates escape every value.
"""

from __future__ import annotations

import unicodedata
from typing import Final

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
