"""hatp_journal.toolkit: add undo to FastMCP tools.

Declare each tool with :func:`undoable`, :func:`irreversible` or :func:`read_only`, register its undo
with :func:`compensates`, say what it did with an :class:`Effect` inside a :class:`Tx`, and publish
everything with :meth:`Journal.register`. See README.md for a complete example and
docs/server-authors.md for the whole surface. The rest is in themed modules:

- :mod:`hatp_journal.toolkit.testing`: ``JournalHarness``, the conformance hooks ``sample_for`` and
  ``outside_edit_for``, ``spec_of``;
- :mod:`hatp_journal.toolkit.versions`: versioned rows, change summaries, deletes that can be undone;
- :mod:`hatp_journal.toolkit.ui`: reading and fingerprinting a record from an app's screen
  (docs/ui-undo.md);
- :mod:`hatp_journal.toolkit.wire`, :mod:`~hatp_journal.toolkit.signing`,
  :mod:`~hatp_journal.toolkit.schema`: the protocol's models, canonical JSON, receipts and schemas;
- :mod:`hatp_journal.toolkit.errors`, :mod:`~hatp_journal.toolkit.store`: every error code, the store.

Modules whose names start with ``_`` are the toolkit's own. The names this package exported until 0.1
still import, with a DeprecationWarning that names their new place (toolkit/_moved.py).
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports
from hatp_journal.toolkit._moved import install_finder, moved_name

if TYPE_CHECKING:
    from hatp_journal.toolkit._effects import Effect, ResourceState, Tx, Undone, Write
    from hatp_journal.toolkit._journal import Journal
    from hatp_journal.toolkit._revisions import Revision, Versioned, summarize
    from hatp_journal.toolkit._spec import (
        after_commit_action,
        compensates,
        irreversible,
        previews,
        read_only,
        undoable,
    )
    from hatp_journal.toolkit.errors import DeclarationError, ToolFailed, UndoFailed
    from hatp_journal.toolkit.signing import SigningKey
    from hatp_journal.toolkit.store import create_store_engine
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.toolkit._effects": ["Effect", "ResourceState", "Tx", "Undone", "Write"],
            "hatp_journal.toolkit._journal": ["Journal"],
            "hatp_journal.toolkit._revisions": ["Revision", "Versioned", "summarize"],
            "hatp_journal.toolkit._spec": [
                "after_commit_action",
                "compensates",
                "irreversible",
                "previews",
                "read_only",
                "undoable",
            ],
            "hatp_journal.toolkit.errors": ["DeclarationError", "ToolFailed", "UndoFailed"],
            "hatp_journal.toolkit.signing": ["SigningKey"],
            "hatp_journal.toolkit.store": ["create_store_engine"],
        },
        fallback=moved_name,
    )


install_finder()

__all__ = [
    "DeclarationError",
    "Effect",
    "Journal",
    "ResourceState",
    "Revision",
    "SigningKey",
    "ToolFailed",
    "Tx",
    "UndoFailed",
    "Undone",
    "Versioned",
    "Write",
    "after_commit_action",
    "compensates",
    "create_store_engine",
    "irreversible",
    "previews",
    "read_only",
    "summarize",
    "undoable",
]
