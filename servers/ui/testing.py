"""The UI server's hooks for the conformance suite's test-only surface (``docs/conformance.md``).

Published only in testing mode (``HATP_JOURNAL_TESTING=1``). Every sample first creates the
invoice it needs through the app's own screens, as the app's user would, so no sample depends on
the seeded invoices or on what earlier checks left behind. Arguments are padded as an agent might
type them (``" 1350.5 "``); the app stores ``1350.50``, which is what a summary must show.

The outside edit is a colleague's edit made through the fake app's test controls (``POST
/_control/colleague-edit``; the app must run with ``--test-controls``): a change in the app's own
store, outside the agent's run. Only this test-only surface uses the controls; the tools see the
app through its screens alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final
from urllib.error import URLError
from urllib.request import Request, urlopen

from hatp_journal.toolkit import ToolFailed
from hatp_journal.toolkit.testing import Sample, outside_edit_for, sample_for

from .tools import InvoiceUi

COLLEAGUE: Final = "eve@acme.com"
CONTROL_TIMEOUT_SECONDS: Final = 5.0


def ui_testing_hooks(ui: InvoiceUi) -> tuple[Callable[..., Any], ...]:
    """Sample makers and outside edits of one UI server driving the app at ``ui.app_url``."""

    def new_invoice(customer: str, amount: str) -> str:
        """Create a Draft invoice through the app's "New invoice" form; its on-screen id."""
        invoice_id: str = ui.screens(lambda screens: screens.create(customer, amount))
        return invoice_id

    @sample_for("create_invoice")
    def a_new_invoice() -> Sample:
        """A new invoice for Globex Europe, customer and amount padded as an agent might type them."""
        return Sample(
            arguments={"customer": "  Globex Europe ", "amount": " 1350.5 "},
            shows=["Customer Globex Europe", "Amount 1350.50"],
            hides=["  Globex Europe ", " 1350.5 "],
        )

    @sample_for("edit_invoice")
    def a_raised_amount() -> Sample:
        """Raise a fresh invoice's amount from 100.00 to 1350.50, typed ``" 1350.5 "``."""
        invoice_id = new_invoice("Initech", "100.00")
        return Sample(
            arguments={"invoice_id": invoice_id, "amount": " 1350.5 "},
            resource=ui.uri(invoice_id),
            shows=["Amount: 100.00 → 1350.50"],
            hides=[" 1350.5 "],
        )

    @sample_for("delete_invoice")
    def a_deleted_invoice() -> Sample:
        """Delete a fresh invoice; the summary names what the list showed, which the id alone does not."""
        invoice_id = new_invoice("Umbrella Corp", "89.90")
        return Sample(
            arguments={"invoice_id": invoice_id},
            resource=ui.uri(invoice_id),
            shows=["Customer Umbrella Corp, Amount 89.90", "moved to Trash"],
        )

    @sample_for("send_invoice")
    def a_sent_invoice() -> Sample:
        """Send a fresh Draft invoice; the summary names its customer and the status it now shows."""
        invoice_id = new_invoice("Soylent Corp", "420.00")
        return Sample(
            arguments={"invoice_id": invoice_id},
            shows=["sent to Soylent Corp", "Status: Draft → Sent"],
        )

    @outside_edit_for("create_invoice")
    def eve_changes_the_new_invoice(resource: str) -> None:
        """Eve raises the amount of the invoice the agent created."""
        _colleague_raises_the_amount(ui.app_url, resource)

    @outside_edit_for("edit_invoice")
    def eve_changes_the_edited_invoice(resource: str) -> None:
        """Eve raises the amount again after the agent's edit."""
        _colleague_raises_the_amount(ui.app_url, resource)

    @outside_edit_for("delete_invoice")
    def eve_changes_the_deleted_invoice(resource: str) -> None:
        """Eve changes the amount of the invoice while it sits in Trash."""
        _colleague_raises_the_amount(ui.app_url, resource)

    return (
        a_new_invoice,
        a_raised_amount,
        a_deleted_invoice,
        a_sent_invoice,
        eve_changes_the_new_invoice,
        eve_changes_the_edited_invoice,
        eve_changes_the_deleted_invoice,
    )


def _colleague_raises_the_amount(app_url: str, resource: str) -> None:
    """Add 10.00 to the invoice's amount as :data:`COLLEAGUE`, in the app's store."""
    invoice_id = resource.rsplit("/", 1)[-1]
    shown = _control(app_url, f"/_control/invoices/{invoice_id}")
    raised = Decimal(str(shown["amount"])) + Decimal("10.00")
    edit = {"invoice": invoice_id, "by": COLLEAGUE, "amount": f"{raised:.2f}"}
    _control(app_url, "/_control/colleague-edit", edit)


def _control(app_url: str, path: str, body: dict[str, str] | None = None) -> dict[str, Any]:
    """Call the app's test controls (a POST with ``body``, else a GET); the JSON answer."""
    url = app_url.rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    request = Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urlopen(request, timeout=CONTROL_TIMEOUT_SECONDS) as response:
            answer: dict[str, Any] = json.loads(response.read())
    except (URLError, ValueError) as error:
        raise ToolFailed(
            f"the app's test controls at {url} did not answer ({error}); start the app with --test-controls",
            cause="NO_TEST_CONTROLS",
        ) from None
    return answer
