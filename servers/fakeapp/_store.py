"""The invoice store: one SQLite file, stdlib ``sqlite3``, one short transaction per call."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from ._clock import Clock
from ._errors import AlreadySent, InvoiceNotFound, StoreError
from ._invoice import DRAFT, SENT, Invoice, format_invoice_id, parse_invoice_id

# Who the seed data and the app's own UI record as the author of a change: the principal (protocol.md §0).
APP_USER = "dana@acme.com"

_SEED = (("Globex", "1200.00", DRAFT), ("Initech", "450.00", SENT), ("Umbrella Corp", "89.90", DRAFT))

# AUTOINCREMENT so a purged invoice's id is never handed out again: a fingerprint that names
# INV-0003 must never match a different record later.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS invoices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    customer TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at REAL NOT NULL,
    deleted_at REAL
);
CREATE TABLE IF NOT EXISTS fakeapp_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_COLUMNS = "id, customer, amount_cents, status, updated_by, updated_at, deleted_at"
_EXPECTED_COLUMNS = {name.strip() for name in _COLUMNS.split(",")}


@dataclass(frozen=True)
class Changes:
    """Field values to change on an invoice; ``None`` leaves a field as it is."""

    customer: str | None = None
    amount: Decimal | None = None
    status: str | None = None


class InvoiceStore:
    """Invoices in a SQLite file, with a Trash that keeps deleted ones for ``retention_days``.

    Every call first purges what has been in Trash longer than the retention window (by
    ``clock``), so no call can see or restore an expired invoice. Safe to use from several
    threads: each call opens its own connection and runs in one ``BEGIN IMMEDIATE`` transaction.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock,
        retention_days: int = 30,
        seed: bool = True,
    ) -> None:
        if retention_days < 0:
            raise ValueError(f"retention_days must be 0 or more, got {retention_days}")
        self._path = Path(path)
        self._clock = clock
        self._retention = timedelta(days=retention_days)
        self.retention_days = retention_days
        self._initialise(seed)

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    def kept_until(self, invoice: Invoice) -> datetime | None:
        """When a trashed invoice will be purged (``None`` if it is not in Trash)."""
        return None if invoice.deleted_at is None else invoice.deleted_at + self._retention

    def active(self) -> list[Invoice]:
        """Invoices not in Trash, oldest first."""
        with self._transaction() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM invoices WHERE deleted_at IS NULL ORDER BY id"
            ).fetchall()
        return [_to_invoice(row) for row in rows]

    def trash(self) -> list[Invoice]:
        """Invoices in Trash that can still be restored, most recently deleted first."""
        with self._transaction() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM invoices WHERE deleted_at IS NOT NULL"
                " ORDER BY deleted_at DESC, id DESC"
            ).fetchall()
        return [_to_invoice(row) for row in rows]

    def get(self, invoice_id: str) -> Invoice | None:
        """The invoice wherever it is (list or Trash), or ``None`` if unknown or purged."""
        with self._transaction() as conn:
            return self._read(conn, invoice_id)

    def create(self, *, customer: str, amount: Decimal, by: str) -> Invoice:
        """Add a Draft invoice from already-validated values."""
        now = self._clock.now().timestamp()
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO invoices (customer, amount_cents, status, updated_by, updated_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (customer, _cents(amount), DRAFT, by, now),
            )
            number = cursor.lastrowid
            assert number is not None  # an INSERT into a rowid table always has one
            return self._require(conn, format_invoice_id(number), trashed=None)

    def edit(self, invoice_id: str, changes: Changes, *, by: str, include_trash: bool = False) -> Invoice:
        """Apply ``changes`` and record ``by`` as the last author; a no-op change writes nothing.

        Only invoices in the list can be edited, unless ``include_trash`` (a colleague working
        directly on the record, see the test controls).
        """
        with self._transaction() as conn:
            current = self._require(conn, invoice_id, trashed=None if include_trash else False)
            updated = {
                "customer": changes.customer if changes.customer is not None else current.customer,
                "amount_cents": _cents(changes.amount if changes.amount is not None else current.amount),
                "status": changes.status if changes.status is not None else current.status,
            }
            before = {
                "customer": current.customer,
                "amount_cents": _cents(current.amount),
                "status": current.status,
            }
            if updated == before:
                return current
            conn.execute(
                "UPDATE invoices SET customer = ?, amount_cents = ?, status = ?, updated_by = ?,"
                " updated_at = ? WHERE id = ?",
                (
                    updated["customer"],
                    updated["amount_cents"],
                    updated["status"],
                    by,
                    self._clock.now().timestamp(),
                    _number(invoice_id),
                ),
            )
            return self._require(conn, invoice_id, trashed=None)

    def send(self, invoice_id: str, *, by: str) -> Invoice:
        """Mark a Draft invoice Sent. There is deliberately no way back."""
        with self._transaction() as conn:
            current = self._require(conn, invoice_id, trashed=False)
            if current.status == SENT:
                raise AlreadySent(invoice_id)
            self._stamp(conn, invoice_id, "status = ?", (SENT,), by)
            return self._require(conn, invoice_id, trashed=None)

    def delete(self, invoice_id: str, *, by: str) -> Invoice:
        """Move an invoice to Trash."""
        with self._transaction() as conn:
            self._require(conn, invoice_id, trashed=False)
            now = self._clock.now().timestamp()
            self._stamp(conn, invoice_id, "deleted_at = ?", (now,), by)
            return self._require(conn, invoice_id, trashed=None)

    def restore(self, invoice_id: str, *, by: str) -> Invoice:
        """Bring an invoice back from Trash."""
        with self._transaction() as conn:
            self._require(conn, invoice_id, trashed=True)
            self._stamp(conn, invoice_id, "deleted_at = NULL", (), by)
            return self._require(conn, invoice_id, trashed=None)

    def reset(self) -> None:
        """Forget every invoice and seed again, as if the file were new (ids restart at 1)."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM invoices")
            # AUTOINCREMENT keeps its counter here; a fresh file would have none.
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'invoices'")
            self._seed(conn)

    def require_in_trash(self, invoice_id: str) -> Invoice:
        """The invoice if it is in Trash; raises :class:`InvoiceNotFound` otherwise."""
        with self._transaction() as conn:
            return self._require(conn, invoice_id, trashed=True)

    def require_active(self, invoice_id: str) -> Invoice:
        """The invoice if it is in the list; raises :class:`InvoiceNotFound` otherwise."""
        with self._transaction() as conn:
            return self._require(conn, invoice_id, trashed=False)

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self._path, timeout=5.0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._purge(conn)
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _purge(self, conn: sqlite3.Connection) -> None:
        # Strictly older than the window: an item deleted exactly N days ago is still kept.
        cutoff = (self._clock.now() - self._retention).timestamp()
        conn.execute("DELETE FROM invoices WHERE deleted_at IS NOT NULL AND deleted_at < ?", (cutoff,))

    def _read(self, conn: sqlite3.Connection, invoice_id: str) -> Invoice | None:
        number = parse_invoice_id(invoice_id)
        if number is None:
            return None
        row = conn.execute(f"SELECT {_COLUMNS} FROM invoices WHERE id = ?", (number,)).fetchone()
        return None if row is None else _to_invoice(row)

    def _require(self, conn: sqlite3.Connection, invoice_id: str, *, trashed: bool | None) -> Invoice:
        invoice = self._read(conn, invoice_id)
        where = "Trash" if trashed else "invoices"
        if invoice is None or (trashed is not None and invoice.in_trash != trashed):
            raise InvoiceNotFound(invoice_id, where)
        return invoice

    def _stamp(
        self,
        conn: sqlite3.Connection,
        invoice_id: str,
        assignment: str,
        values: tuple[object, ...],
        by: str,
    ) -> None:
        conn.execute(
            f"UPDATE invoices SET {assignment}, updated_by = ?, updated_at = ? WHERE id = ?",
            (*values, by, self._clock.now().timestamp(), _number(invoice_id)),
        )

    def _seed(self, conn: sqlite3.Connection) -> None:
        now = self._clock.now().timestamp()
        conn.executemany(
            "INSERT INTO invoices (customer, amount_cents, status, updated_by, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(name, _cents(Decimal(a)), status, APP_USER, now) for name, a, status in _SEED],
        )
        conn.execute("INSERT OR REPLACE INTO fakeapp_meta (key, value) VALUES ('seeded', '1')")

    def _initialise(self, seed: bool) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=5.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {self._path}: {exc}") from exc
        try:
            # Refuse someone else's database before changing anything in it.
            columns = {row[1] for row in conn.execute("PRAGMA table_info(invoices)")}
            if columns and columns != _EXPECTED_COLUMNS:
                raise StoreError(f"{self._path} has an invoices table the fake app did not make")
            # WAL lets tests read ground truth while the server writes.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            seeded = conn.execute("SELECT 1 FROM fakeapp_meta WHERE key = 'seeded'").fetchone()
            if seed and seeded is None:
                conn.execute("BEGIN IMMEDIATE")
                self._seed(conn)
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot use {self._path} as the fake app's database: {exc}") from exc
        finally:
            conn.close()


def _cents(amount: Decimal) -> int:
    return int(amount * 100)


def _number(invoice_id: str) -> int:
    number = parse_invoice_id(invoice_id)
    if number is None:
        raise InvoiceNotFound(invoice_id)
    return number


def _to_invoice(row: tuple[int, str, int, str, str, float, float | None]) -> Invoice:
    number, customer, cents, status, updated_by, updated_at, deleted_at = row
    return Invoice(
        id=format_invoice_id(number),
        customer=customer,
        amount=(Decimal(cents) / 100).quantize(Decimal("0.01")),
        status=status,
        updated_by=updated_by,
        updated_at=datetime.fromtimestamp(updated_at, UTC),
        deleted_at=None if deleted_at is None else datetime.fromtimestamp(deleted_at, UTC),
    )
