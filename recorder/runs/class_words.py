"""Each reversibility class in words, for what people read (``asks``, ``show``, the Asks page)."""

from __future__ import annotations

from typing import Final

CLASS_WORDS: Final = {
    "R0": "no effect",
    "R1": "restorable",
    "R2": "compensable at a known cost",
    "R3": "hard to recover",
    "R4": "irreversible",
}
"""Each reversibility class in words (docs/policy.md)."""


def class_words(rclass: str | None) -> str:
    """``R2 (compensable at a known cost)`` from a recorded reversibility class; "" when there is none."""
    if not rclass:
        return ""
    words = CLASS_WORDS.get(rclass)
    return f"{rclass} ({words})" if words else rclass
