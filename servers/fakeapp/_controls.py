"""The test knobs as one object, shared by the ``/_control`` HTTP API and :class:`FakeApp`."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from ._clock import Clock
from ._errors import InvalidField
from ._invoice import Invoice, parse_amount, parse_customer, parse_status
from ._knobs import Knobs, Layout, is_layout
from ._store import Changes, InvoiceStore


class Controls:
    """Turns the knobs: layout, faulty restore, the clock, and edits by a colleague."""

    def __init__(self, store: InvoiceStore, knobs: Knobs, clock: Clock) -> None:
        self._store = store
        self._knobs = knobs
        self._clock = clock
        self._initial_layout = knobs.layout

    def reset(self) -> None:
        """Back to a freshly seeded database, the starting layout, real time, restore working."""
        self._store.reset()
        self._clock.reset()
        self._knobs.layout = self._initial_layout
        self._knobs.faulty_restore = False

    def set_layout(self, layout: str) -> None:
        """Switch every page to layout ``"a"`` or ``"b"``."""
        if not is_layout(layout):
            raise InvalidField("layout", "must be a or b")
        self._knobs.layout = layout

    @property
    def layout(self) -> Layout:
        """The layout pages render with now."""
        return self._knobs.layout

    def set_faulty_restore(self, enabled: bool) -> None:
        """When on, Restore reports success but leaves the invoice in Trash."""
        self._knobs.faulty_restore = enabled

    def advance_clock(self, days: float) -> datetime:
        """Move the app's clock by ``days`` (fractions allowed) and return the new time."""
        return self._clock.advance(days=days)

    def set_clock(self, now: datetime) -> None:
        """Stop the app's clock at ``now`` (``advance_clock`` still moves it)."""
        self._clock.set(now)

    def colleague_edit(
        self,
        invoice_id: str,
        *,
        by: str,
        customer: str | None = None,
        amount: str | Decimal | None = None,
        status: str | None = None,
    ) -> Invoice:
        """Change fields of an invoice as someone else (``by``), outside the agent's session."""
        if not by.strip():
            raise InvalidField("by", "is required")
        if customer is None and amount is None and status is None:
            raise InvalidField("fields", "name at least one of customer, amount, status")
        changes = Changes(
            customer=None if customer is None else parse_customer(customer),
            amount=None if amount is None else parse_amount(str(amount)),
            status=None if status is None else parse_status(status),
        )
        return self._store.edit(invoice_id, changes, by=by.strip(), include_trash=True)

    def state(self) -> dict[str, Any]:
        """The knobs as JSON-ready values."""
        return {
            "layout": self._knobs.layout,
            "faultyRestore": self._knobs.faulty_restore,
            "now": self._clock.now().isoformat(),
            "retentionDays": self._store.retention_days,
        }

    def invoice_json(self, invoice: Invoice) -> dict[str, Any]:
        """One invoice as JSON-ready values (camelCase keys, amount as a string)."""
        kept = self._store.kept_until(invoice)
        return {
            "id": invoice.id,
            "customer": invoice.customer,
            "amount": invoice.amount_text,
            "status": invoice.status,
            "updatedBy": invoice.updated_by,
            "updatedAt": invoice.updated_at.isoformat(),
            "inTrash": invoice.in_trash,
            "deletedAt": None if invoice.deleted_at is None else invoice.deleted_at.isoformat(),
            "keptUntil": None if kept is None else kept.isoformat(),
        }
