"""Undo through an app's user interface: read one record from Playwright's ARIA snapshot and fingerprint
it, so a compensation can tell whether a colleague changed the record since (docs/ui-undo.md)."""

from hatp_journal.toolkit._aria import AriaNode, AriaSnapshotError, parse_aria_snapshot
from hatp_journal.toolkit._fingerprint import (
    AriaSnapshotSource,
    RecordReadError,
    RecordView,
    read_record,
    record_fingerprint,
    record_in_table,
)

__all__ = [
    "AriaNode",
    "AriaSnapshotError",
    "AriaSnapshotSource",
    "RecordReadError",
    "RecordView",
    "parse_aria_snapshot",
    "read_record",
    "record_fingerprint",
    "record_in_table",
]
