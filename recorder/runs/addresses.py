"""The mail addresses a call's arguments name: what an ask says a call reaches (``ask_words.py``)
and whom an undo step's side effect reaches (``recorder/undo/side_effects.py``)."""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"[^\s@,;<>\"']+@[^\s@,;<>\"']+\.[^\s@,;<>\"']+")


def addresses(value: object, depth: int = 0) -> list[str]:
    """The addresses in ``value``: a string, or lists and objects of them (``[{"email": …}]``)."""
    if isinstance(value, str):
        return list(_ADDRESS.findall(value))
    if depth >= 4:
        return []
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [a for v in inner for a in addresses(v, depth + 1)]
