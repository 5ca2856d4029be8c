"""hatp_journal.toolkit: add undo to FastMCP tools.

Declare each tool with :func:`undoable`, :func:`irreversible` or :func:`read_only`,
register its undo with :func:`compensates`, and publish everything with
:meth:`Journal.register`. See README.md for a complete example. Servers that act through an
app's user interface fingerprint the record they change with :func:`read_record` (docs/ui-undo.md).
:func:`sample_for` and :func:`outside_edit_for` feed the conformance suite's test-only surface
(docs/conformance.md).
"""

from typing import TYPE_CHECKING

from hatp_journal.toolkit.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.toolkit.canonical import canonical_bytes, content_etag, sha256_digest
    from hatp_journal.toolkit.clock import parse_wire_time, utc_now, wire_time
    from hatp_journal.toolkit.durations import format_window, parse_window
    from hatp_journal.toolkit.effects import Effect, ResourceState, Summary, Tx, Undone, Write
    from hatp_journal.toolkit.errors import (
        DeclarationError,
        ErrorCode,
        JournalError,
        KeyFileError,
        StoreError,
        ToolFailed,
        UndoFailed,
        UndoUnverified,
    )
    from hatp_journal.toolkit.fingerprint import RecordReadError, RecordView, read_record, record_fingerprint
    from hatp_journal.toolkit.journal import Invocation, Journal
    from hatp_journal.toolkit.samples import outside_edit_for, sample_for
    from hatp_journal.toolkit.signing import SigningKey, VerifyKey, verify_answer, verify_call
    from hatp_journal.toolkit.spec import (
        after_commit_action,
        compensates,
        irreversible,
        previews,
        read_only,
        undoable,
    )
    from hatp_journal.toolkit.store import create_store_engine
    from hatp_journal.toolkit.tombstones import delete_versioned, restore_versioned, versioned_state
    from hatp_journal.toolkit.versions import Revision, Versioned, field_changes, next_revision, summarize
    from hatp_journal.toolkit.wire import (
        META_KEY,
        CompensateRequest,
        Declaration,
        EffectChange,
        EffectInfo,
        JournalObject,
        Money,
        Override,
        Sample,
        UndoAnswer,
        Use,
    )
else:  # imported on first use, so that a command's --help stays quick (toolkit/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.toolkit.canonical": ["canonical_bytes", "content_etag", "sha256_digest"],
            "hatp_journal.toolkit.clock": ["parse_wire_time", "utc_now", "wire_time"],
            "hatp_journal.toolkit.durations": ["format_window", "parse_window"],
            "hatp_journal.toolkit.effects": ["Effect", "ResourceState", "Summary", "Tx", "Undone", "Write"],
            "hatp_journal.toolkit.errors": [
                "DeclarationError",
                "ErrorCode",
                "JournalError",
                "KeyFileError",
                "StoreError",
                "ToolFailed",
                "UndoFailed",
                "UndoUnverified",
            ],
            "hatp_journal.toolkit.fingerprint": [
                "RecordReadError",
                "RecordView",
                "read_record",
                "record_fingerprint",
            ],
            "hatp_journal.toolkit.journal": ["Invocation", "Journal"],
            "hatp_journal.toolkit.samples": ["outside_edit_for", "sample_for"],
            "hatp_journal.toolkit.signing": ["SigningKey", "VerifyKey", "verify_answer", "verify_call"],
            "hatp_journal.toolkit.spec": [
                "after_commit_action",
                "compensates",
                "irreversible",
                "previews",
                "read_only",
                "undoable",
            ],
            "hatp_journal.toolkit.store": ["create_store_engine"],
            "hatp_journal.toolkit.tombstones": ["delete_versioned", "restore_versioned", "versioned_state"],
            "hatp_journal.toolkit.versions": [
                "Revision",
                "Versioned",
                "field_changes",
                "next_revision",
                "summarize",
            ],
            "hatp_journal.toolkit.wire": [
                "META_KEY",
                "CompensateRequest",
                "Declaration",
                "EffectChange",
                "EffectInfo",
                "JournalObject",
                "Money",
                "Override",
                "Sample",
                "UndoAnswer",
                "Use",
            ],
        },
    )

__all__ = [
    "META_KEY",
    "CompensateRequest",
    "Declaration",
    "DeclarationError",
    "Effect",
    "EffectChange",
    "EffectInfo",
    "ErrorCode",
    "Invocation",
    "Journal",
    "JournalError",
    "JournalObject",
    "KeyFileError",
    "Money",
    "Override",
    "RecordReadError",
    "RecordView",
    "ResourceState",
    "Revision",
    "Sample",
    "SigningKey",
    "StoreError",
    "Summary",
    "ToolFailed",
    "Tx",
    "UndoAnswer",
    "UndoFailed",
    "UndoUnverified",
    "Undone",
    "Use",
    "VerifyKey",
    "Versioned",
    "Write",
    "after_commit_action",
    "canonical_bytes",
    "compensates",
    "content_etag",
    "create_store_engine",
    "delete_versioned",
    "field_changes",
    "format_window",
    "irreversible",
    "next_revision",
    "outside_edit_for",
    "parse_window",
    "parse_wire_time",
    "previews",
    "read_only",
    "read_record",
    "record_fingerprint",
    "restore_versioned",
    "sample_for",
    "sha256_digest",
    "summarize",
    "undoable",
    "utc_now",
    "verify_answer",
    "verify_call",
    "versioned_state",
    "wire_time",
]
