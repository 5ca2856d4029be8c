"""One error hierarchy for the fake app; the routes map each to an HTTP status in one place."""

from __future__ import annotations


class FakeAppError(Exception):
    """Base of every error the fake app raises on purpose."""


class StoreError(FakeAppError):
    """The database file cannot be used (not SQLite, or not a fake-app database)."""


class InvoiceNotFound(FakeAppError):
    """No invoice with this id where it was looked for (HTTP 404)."""

    def __init__(self, invoice_id: str, where: str = "invoices") -> None:
        super().__init__(f"{invoice_id} is not in {where}")
        self.invoice_id = invoice_id
        self.where = where


class InvalidField(FakeAppError):
    """A submitted field is malformed (HTTP 400); ``field`` names it, ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class AlreadySent(FakeAppError):
    """The invoice was sent before; sending has no reverse and does not repeat (HTTP 409)."""

    def __init__(self, invoice_id: str) -> None:
        super().__init__(f"{invoice_id} was already sent")
        self.invoice_id = invoice_id
