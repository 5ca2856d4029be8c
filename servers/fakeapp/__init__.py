"""A small invoicing web app for testing undo through a user interface (SPEC §6).

Computer-use server authors drive it in a real browser: invoices with on-screen ids, a Trash
with a retention window, a "Send invoice" that cannot be taken back, and knobs for the cases
undo must handle (a second layout, a colleague's edit, a restore that silently fails, the clock).
Run it with ``hatp-fakeapp serve`` or in-process with :class:`FakeApp`.
"""

from ._clock import Clock
from ._errors import AlreadySent, FakeAppError, InvalidField, InvoiceNotFound, StoreError
from ._invoice import Invoice
from ._knobs import LAYOUTS, Layout
from ._runner import FakeApp
from ._store import APP_USER, InvoiceStore

__all__ = [
    "APP_USER",
    "LAYOUTS",
    "AlreadySent",
    "Clock",
    "FakeApp",
    "FakeAppError",
    "InvalidField",
    "Invoice",
    "InvoiceNotFound",
    "InvoiceStore",
    "Layout",
    "StoreError",
]
