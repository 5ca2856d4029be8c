"""Rows that carry their version: the :class:`Versioned` base, :class:`Revision` (a row's version before
and after a write), the change summaries an :class:`~hatp_journal.toolkit.Effect` shows, and deletes
that can be undone through a tombstone (docs/server-authors.md, sections 1 and 9)."""

from hatp_journal.toolkit._effects import Summary
from hatp_journal.toolkit._revisions import (
    Revision,
    Versioned,
    changes_text,
    field_changes,
    next_revision,
    summarize,
    value_text,
)
from hatp_journal.toolkit._tombstones import Tombstone, delete_versioned, restore_versioned, versioned_state

__all__ = [
    "Revision",
    "Summary",
    "Tombstone",
    "Versioned",
    "changes_text",
    "delete_versioned",
    "field_changes",
    "next_revision",
    "restore_versioned",
    "summarize",
    "value_text",
    "versioned_state",
]
