"""How a conflict on one of several resources reads: shared by the toolkit's answers and the
Recorder's plan (which must not load the undo store's tables to say it)."""

from __future__ import annotations

from collections.abc import Sequence

from hatp_journal.toolkit.wire import ResourceFound


def conflict_words(conflicts: Sequence[ResourceFound]) -> str:
    """``crm://…/D-2: amount is now 9.00 (v4), changed by eve@acme.com; …``: each conflict named."""
    said = []
    for one in conflicts:
        if one.version_found is None:
            said.append(f"{one.resource}: it no longer exists")
            continue
        what = ", ".join(f"{c.field} is now {c.now}" for c in one.changes) or "it changed"
        by = f", changed by {one.changed_by}" if one.changed_by else ""
        said.append(f"{one.resource}: {what} ({one.version_found}){by}")
    return "; ".join(said)
