"""Aligned columns for the commands' text output: what people read in a terminal.

Machine-readable forms stay where they are (``show --json``); this is for eyes.
"""

from __future__ import annotations

from collections.abc import Sequence

from hatp_journal._shared.text import shown

GAP = "  "


def aligned(rows: Sequence[Sequence[str]], *, indent: str = "") -> list[str]:
    """Each row as one line, every column but the last padded to its widest cell; empty columns
    (in every row) are left out, so there are no runs of blanks where nothing is said. Every cell is
    made safe first (:func:`~hatp_journal._shared.text.shown`): a value is one cell of one line."""
    if not rows:
        return []
    width = max(len(row) for row in rows)
    cells = [[*map(shown, row), *[""] * (width - len(row))] for row in rows]
    used = [column for column in range(width) if any(row[column] for row in cells)]
    widths = {column: max(len(row[column]) for row in cells) for column in used}
    last = used[-1] if used else -1
    return [
        (indent + GAP.join(row[c] if c == last else row[c].ljust(widths[c]) for c in used)).rstrip()
        for row in cells
    ]
