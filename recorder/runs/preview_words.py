"""An ask's effect preview in words, for ``asks``, ``show`` and the pages: kept apart from
``previews.py`` (which asks the server) so that the commands reading the record load no MCP stack."""

from __future__ import annotations

from typing import Any


def preview_words(preview: Any) -> str:
    """One line a person reads of an ask's preview: what the server says the call would do."""
    if not isinstance(preview, dict):
        return ""
    if "failed" in preview:
        return f"no preview: {preview['failed']}"
    effect = preview.get("effect")
    if not isinstance(effect, dict):
        return ""
    words = f"would: {effect.get('summary', '')}"
    changes = effect.get("changes")
    if isinstance(changes, list) and changes:
        shown = [
            f"{c.get('field')} {c.get('before')!r} -> {c.get('after')!r}"
            for c in changes
            if isinstance(c, dict)
        ]
        words += " (" + ", ".join(shown) + ")"
    return words
