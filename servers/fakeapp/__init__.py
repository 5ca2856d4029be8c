"""A small invoicing web app for testing undo through a user interface (protocol.md §6).

Computer-use server authors drive it in a real browser: invoices with on-screen ids, a Trash
with a retention window, a "Send invoice" that cannot be taken back, and knobs for the cases
undo must handle (a second layout, a colleague's edit, a restore that silently fails, the clock).
Run it with ``hatp-fakeapp serve`` or in-process with :class:`FakeApp`.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from ._clock import Clock
    from ._errors import AlreadySent, FakeAppError, InvalidField, InvoiceNotFound, StoreError
    from ._invoice import Invoice
    from ._knobs import LAYOUTS, Layout
    from ._runner import FakeApp
    from ._store import APP_USER, InvoiceStore
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.fakeapp._clock": ["Clock"],
            "hatp_journal.servers.fakeapp._errors": [
                "AlreadySent",
                "FakeAppError",
                "InvalidField",
                "InvoiceNotFound",
                "StoreError",
            ],
            "hatp_journal.servers.fakeapp._invoice": ["Invoice"],
            "hatp_journal.servers.fakeapp._knobs": ["LAYOUTS", "Layout"],
            "hatp_journal.servers.fakeapp._runner": ["FakeApp"],
            "hatp_journal.servers.fakeapp._store": ["APP_USER", "InvoiceStore"],
        },
    )

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
