"""Fingerprints of one on-screen record, for undo through a user interface (protocol.md §6).

A computer-use server cannot ask an app for an ETag, so it reads the record a person would see:
its on-screen id and visible field values, taken from the accessibility tree and keyed by column
header. Whole-tree or whole-screen snapshots shift with app versions, window sizes and unrelated
records; one record's labelled values do not. The fingerprint is a hash of their RFC 8785 form.

Typical use with Playwright (sync API)::

    table = page.get_by_role("table", name="Invoices")
    before = read_record(table, "INV-0001")        # RecordView, or None if no such row
    ...                                            # act through the UI
    after = read_record(table, "INV-0001")
    Effect(..., before=before.fingerprint, version=after.fingerprint,
           before_etag=before.fingerprint, etag=after.fingerprint, fields=after.fields)
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.toolkit._aria import AriaNode, parse_aria_snapshot

FINGERPRINT_PREFIX = "fp-"
TABLE_ROLES = frozenset({"table", "grid", "treegrid"})
CELL_ROLES = frozenset({"cell", "gridcell", "rowheader"})
ACTIONS_COLUMNS: tuple[str, ...] = ("Actions",)
"""Columns holding buttons and links, not values: left out of fingerprints by default."""


class RecordReadError(ValueError):
    """The record can't be read unambiguously (no such table, two rows with its id, cells without
    headers)."""


class AriaSnapshotSource(Protocol):
    """Anything with Playwright's ``aria_snapshot()``, e.g. a sync ``Locator``."""

    def aria_snapshot(self) -> str:
        """The YAML ARIA snapshot of the element."""
        ...


@dataclass(frozen=True)
class RecordView:
    """One record as a person sees it: its on-screen id, where it is shown, and its visible values.

    ``table`` is the accessible name of the table the row sits in (e.g. "Invoices" or "Trash");
    ``fields`` maps each column header to the cell's accessible name.
    """

    id: str
    table: str
    fields: Mapping[str, str]

    def wire(self) -> dict[str, Any]:
        """The JSON form that is fingerprinted."""
        return {"id": self.id, "table": self.table, "fields": dict(self.fields)}

    @property
    def fingerprint(self) -> str:
        """``fp-`` + 32 hex digits of SHA-256 over the RFC 8785 form: equal views, equal prints."""
        return record_fingerprint(self)


def record_fingerprint(view: RecordView) -> str:
    """The fingerprint of ``view`` (the same as ``view.fingerprint``)."""
    digest = hashlib.sha256(canonical_bytes(view.wire())).hexdigest()
    return FINGERPRINT_PREFIX + digest[:32]


def read_record(
    table: AriaSnapshotSource, record_id: str, *, ignore: Collection[str] = ACTIONS_COLUMNS
) -> RecordView | None:
    """Read the row named ``record_id`` from a table locator's accessibility tree; None if absent.

    One ``aria_snapshot()`` call reads headers and row together, so they can't disagree. A table
    that is not on the page at all is a :class:`RecordReadError`, not None: a page that did not
    load must never read as "the record is gone".
    """
    try:
        snapshot = table.aria_snapshot()
    except Exception as error:
        # Playwright's TimeoutError, matched by name: the toolkit does not import Playwright.
        if type(error).__name__ != "TimeoutError":
            raise
        raise RecordReadError(f"no such table on the page: {str(error).splitlines()[0]}") from None
    nodes = parse_aria_snapshot(snapshot)
    tables = [node for node in nodes if node.role in TABLE_ROLES]
    if len(tables) != 1:
        raise RecordReadError(f"expected one table in the snapshot, found {len(tables)}")
    return record_in_table(tables[0], record_id, ignore=ignore)


def record_in_table(
    table: AriaNode, record_id: str, *, ignore: Collection[str] = ACTIONS_COLUMNS
) -> RecordView | None:
    """The row named ``record_id`` in a parsed table node, keyed by column header."""
    rows = [node for node in table.walk() if node.role == "row"]
    headers = next(
        (
            [cell.label for cell in row.children if cell.role == "columnheader"]
            for row in rows
            if any(cell.role == "columnheader" for cell in row.children)
        ),
        None,
    )
    if headers is None:
        raise RecordReadError(f"table {table.name!r} has no column headers")
    if len(set(headers)) != len(headers):
        # Values are keyed by header: two columns with one header would hide one of them.
        raise RecordReadError(f"table {table.name!r} has repeated column headers: {headers}")
    matches = [row for row in rows if row.name == record_id]
    if not matches:
        return None
    if len(matches) > 1:
        raise RecordReadError(f"table {table.name!r} shows {len(matches)} rows named {record_id!r}")
    cells = [cell.label for cell in matches[0].children if cell.role in CELL_ROLES]
    if len(cells) != len(headers):
        raise RecordReadError(f"row {record_id!r} has {len(cells)} cells under {len(headers)} column headers")
    fields = {header: cell for header, cell in zip(headers, cells, strict=True) if header not in ignore}
    return RecordView(id=record_id, table=table.name, fields=fields)
