"""The fake invoicing app's screens, used the way a person uses them.

Every read and every action goes through the page: open the app's start page, follow its links,
fill its labelled fields, press its buttons, then read what it shows through the accessibility
tree. Nothing here calls the app's backend or its test controls.
"""

from __future__ import annotations

import itertools
import re
from typing import Final

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page

from hatp_journal.toolkit import ToolFailed
from hatp_journal.toolkit.ui import (
    AriaNode,
    RecordReadError,
    RecordView,
    parse_aria_snapshot,
    read_record,
    record_in_table,
)

from .browser import first_line

INVOICES: Final = "Invoices"
TRASH: Final = "Trash"
_CREATED = re.compile(r"(INV-\d+) created\.")
_RETENTION = re.compile(r"stay here for (\d+) days")
_FIELDS: Final = ("Customer", "Amount")
# Answers with which the app refuses a form and changes nothing, and what each means.
_REFUSED: Final = {400: "invalid_input", 403: "refused", 404: "not_found", 409: "conflict"}


class InvoiceScreens:
    """The app at ``app_url`` on one browser page.

    ``submitted`` turns true the moment a form that changes something is sent: from then on a
    failure may leave a change behind, which the tools report instead of pretending nothing
    happened.
    """

    def __init__(self, page: Page, app_url: str) -> None:
        self.page = page
        self.app_url = app_url.rstrip("/")
        self.submitted = False
        self._showing: str | None = None  # the table the page shows, until the next form is sent

    # -- reading ------------------------------------------------------------------------------

    def listed(self, invoice_id: str) -> RecordView | None:
        """The invoice as the Invoices list shows it; None if it is not listed."""
        self.open_invoices()
        return self._read(INVOICES, invoice_id)

    def in_trash(self, invoice_id: str) -> RecordView | None:
        """The invoice as Trash shows it; None if it is not there."""
        self.open_trash()
        return self._read(TRASH, invoice_id)

    def find(self, invoice_id: str) -> RecordView | None:
        """The invoice wherever a person would find it: the list, else Trash; None if neither."""
        return self.listed(invoice_id) or self.in_trash(invoice_id)

    def all_listed(self) -> list[RecordView]:
        """Every invoice in the list, top to bottom."""
        self.open_invoices()
        [table] = parse_aria_snapshot(self._table(INVOICES).aria_snapshot())
        ids = [row.name for row in table.walk() if row.role == "row" and _is_record_row(row)]
        views = [record_in_table(table, invoice_id) for invoice_id in ids]
        return [view for view in views if view is not None]

    def retention_days(self) -> int:
        """How many days Trash keeps deleted invoices, as the Trash page says."""
        self.open_trash()
        text = self.page.get_by_role("main").aria_snapshot()
        found = _RETENTION.search(text)
        if found is None:
            raise ToolFailed(
                "the Trash page does not say how long it keeps invoices", problem="page_unexpected"
            )
        return int(found.group(1))

    def last_changed_by(self, invoice_id: str) -> str | None:
        """Who changed a listed invoice last, from its edit page; None if that is not shown."""
        self._go_to(INVOICES)
        self._row(INVOICES, invoice_id).get_by_role("link", name="Edit").click()
        self._showing = None
        self.page.get_by_role("region", name="Edit invoice").wait_for()
        nodes = [
            node
            for root in parse_aria_snapshot(self.page.get_by_role("main").aria_snapshot())
            for node in root.walk()
        ]
        for term, definition in itertools.pairwise(nodes):
            if term.role == "term" and term.label == "Last changed by" and definition.role == "definition":
                return definition.label
        return None

    # -- acting -------------------------------------------------------------------------------

    def create(self, customer: str, amount: str) -> str:
        """Fill in "New invoice" and press "Create invoice"; the new on-screen id."""
        self._go_to(INVOICES)
        form = self.page.get_by_role("region", name="New invoice")
        self._fill(form, {"Customer": customer, "Amount": amount})
        self._submit(form.get_by_role("button", name="Create invoice"), form)
        created = _CREATED.fullmatch(self._status())
        if created is None:
            raise ToolFailed(
                f"the app answered {self._status()!r}, not a new invoice", problem="page_unexpected"
            )
        return created.group(1)

    def edit(self, invoice_id: str, values: dict[str, str]) -> None:
        """Open the invoice's edit page from the list, change ``values`` (by label) and Save."""
        self._go_to(INVOICES)
        self._row(INVOICES, invoice_id).get_by_role("link", name="Edit").click()
        form = self.page.get_by_role("region", name="Edit invoice")
        self._fill(form, values)
        self._submit(form.get_by_role("button", name="Save"), form)
        self._expect_status(f"{invoice_id} saved.")

    def delete(self, invoice_id: str) -> None:
        """Press the invoice's "Delete" in the list (the app moves it to Trash)."""
        self._go_to(INVOICES)
        self._submit(self._row(INVOICES, invoice_id).get_by_role("button", name="Delete"))
        self._expect_status(f"{invoice_id} moved to Trash.")

    def restore(self, invoice_id: str) -> None:
        """Press the invoice's "Restore" in Trash."""
        self._go_to(TRASH)
        self._submit(self._row(TRASH, invoice_id).get_by_role("button", name="Restore"))
        self._expect_status(f"{invoice_id} restored.")

    def send(self, invoice_id: str) -> None:
        """Press the invoice's "Send invoice" in the list (the app has no way back)."""
        self._go_to(INVOICES)
        button = self._row(INVOICES, invoice_id).get_by_role("button", name="Send invoice")
        if button.count() == 0:
            raise ToolFailed(
                f'{invoice_id} offers no "Send invoice"; it was sent already', problem="not_sendable"
            )
        self._submit(button)
        self._expect_status(f"{invoice_id} sent.")

    def screenshot(self) -> bytes:
        """What the page shows now, as PNG."""
        return self.page.screenshot(full_page=True)

    # -- navigation -----------------------------------------------------------------------------

    def open_invoices(self) -> None:
        """Load the app's start page, the Invoices list."""
        url = self.app_url + "/"
        try:
            # The app renders on the server: once the document is parsed, everything is on screen.
            response = self.page.goto(url, wait_until="domcontentloaded")
        except PlaywrightError as error:
            raise ToolFailed(
                f"cannot reach the app at {url}: {first_line(error)}", problem="app_unreachable", url=url
            ) from None
        if response is None or not response.ok:
            status = None if response is None else response.status
            raise ToolFailed(
                f"the app's page {url} did not load (HTTP {status})",
                problem="page_failed",
                url=url,
                status=status,
            )
        self._wait_for_table(INVOICES)
        self._showing = INVOICES

    def open_trash(self) -> None:
        """Follow the main navigation's "Trash" link (from the start page, unless already there)."""
        self._go_to(INVOICES)
        self.page.get_by_role("navigation", name="Main").get_by_role("link", name=TRASH).click()
        self._wait_for_table(TRASH)
        self._showing = TRASH

    # -- internals ------------------------------------------------------------------------------

    def _go_to(self, table: str) -> None:
        """Open the page of ``table`` unless it is already shown (reads always load afresh)."""
        if self._showing != table:
            self.open_trash() if table == TRASH else self.open_invoices()

    def _table(self, name: str) -> Locator:
        return self.page.get_by_role("table", name=name, exact=True)

    def _row(self, table: str, invoice_id: str) -> Locator:
        row = self._table(table).get_by_role("row", name=invoice_id, exact=True)
        if row.count() != 1:
            raise ToolFailed(
                f"{invoice_id} is not in {table}", problem="not_found", invoice=invoice_id, where=table
            )
        return row

    def _read(self, table: str, invoice_id: str) -> RecordView | None:
        try:
            return read_record(self._table(table), invoice_id)
        except RecordReadError as error:
            raise ToolFailed(
                f"cannot read {invoice_id} in {table}: {error}", problem="page_unexpected"
            ) from None

    def _wait_for_table(self, name: str) -> None:
        try:
            self._table(name).wait_for()
        except PlaywrightError:
            raise ToolFailed(
                f"the app's page {self.page.url} shows no {name!r} table",
                problem="page_unexpected",
                url=self.page.url,
            ) from None

    def _fill(self, form: Locator, values: dict[str, str]) -> None:
        for label in _FIELDS:
            if label in values:
                form.get_by_label(label, exact=True).fill(values[label])
        for label in _FIELDS:
            # The browser itself refuses to send a required field left empty; say so, as it would.
            message = form.get_by_label(label, exact=True).evaluate("field => field.validationMessage")
            if message:
                raise ToolFailed(f"{label}: {message}", problem="invalid_input", field=label.lower())

    def _submit(self, button: Locator, form: Locator | None = None) -> None:
        self.submitted, self._showing = True, None
        with self.page.expect_navigation(wait_until="domcontentloaded") as navigation:
            button.click()
        response = navigation.value
        if response is not None and response.ok:
            return
        status = None if response is None else response.status
        problem = _REFUSED.get(status or 0)
        if problem is None:
            # Anything else (a server error, no answer): the change may or may not have happened.
            raise ToolFailed(
                f"the app answered HTTP {status} at {self.page.url}", problem="page_failed", status=status
            )
        self.submitted = False  # the app refused the form and changed nothing
        alert = (form or self.page).get_by_role("alert")
        said = alert.first.inner_text().strip() if alert.count() else f"HTTP {status}"
        invalid = [label.lower() for label in _FIELDS if form is not None and _is_invalid(form, label)]
        raise ToolFailed(
            f"the app refused: {said}", problem=problem, status=status, field=next(iter(invalid), None)
        )

    def _status(self) -> str:
        status = self.page.get_by_role("status")
        status.wait_for()
        return status.inner_text().strip()

    def _expect_status(self, expected: str) -> None:
        shown = self._status()
        if shown != expected:
            raise ToolFailed(f"the app said {shown!r}, not {expected!r}", problem="page_unexpected")


def _is_invalid(form: Locator, label: str) -> bool:
    return form.get_by_label(label, exact=True).get_attribute("aria-invalid") == "true"


def _is_record_row(row: AriaNode) -> bool:
    cells = [cell for cell in row.children if cell.role in ("cell", "rowheader")]
    return len(cells) > 1 and any(cell.label == row.name for cell in cells)
