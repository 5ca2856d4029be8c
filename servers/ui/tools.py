"""The invoicing tools, each acting only through the app's user interface (protocol.md §6).

Every tool reads the one record it changes right before acting (``effect.before``) and right
after (``effect.version``): its fingerprint is the record's on-screen id and visible values. Undo
is declared only where the app itself offers the reverse — create ↔ delete, delete ↔ restore from
Trash, edit ↔ edit back — and "Send invoice", which the app cannot take back, is declared ``none``.
The window is the app's Trash retention: after it, a deleted invoice is gone for good.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page
from pydantic import BaseModel, Field

from hatp_journal.toolkit import (
    Effect,
    ResourceState,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    compensates,
    irreversible,
    read_only,
    summarize,
    undoable,
)
from hatp_journal.toolkit.ui import RecordView
from hatp_journal.toolkit.wire import Use

from .browser import BrowserThread, first_line
from .evidence import EvidenceFiles
from .screens import INVOICES, InvoiceScreens

InvoiceId = Annotated[str, Field(pattern=r"^INV-\d{4,9}$", description="on-screen id, e.g. INV-0001")]
Text = Annotated[str, Field(max_length=200)]

Tool = Callable[..., Effect]
"""A journaled tool of this server, as its decorator returns it."""

SEND_REASON: Final = "the invoice is delivered to the customer; the app has no way to unsend it"
SEND_REMEDY: Final = "send the customer a corrected invoice or a credit note"


class CreatedInvoice(BaseModel):
    """Undo of a create: delete the invoice it made."""

    invoice_id: str


class EditBack(BaseModel):
    """Undo of an edit: the visible values to type back, by field label."""

    invoice_id: str
    values: dict[str, str]


class DeletedInvoice(BaseModel):
    """Undo of a delete: restore the invoice from Trash."""

    invoice_id: str


@dataclass(frozen=True)
class InvoiceUi:
    """What every tool needs: the app, the browser that drives it, and where evidence goes."""

    server: str
    app_url: str
    browser: BrowserThread
    evidence: EvidenceFiles
    retention_days: int

    def uri(self, invoice_id: str) -> str:
        """The resource URI of an invoice, e.g. ``ui://fakeapp/invoice/INV-0001``."""
        return f"{self.server}/invoice/{invoice_id}"

    def screens(self, job: Callable[[InvoiceScreens], Any]) -> Any:
        """Run ``job`` on the app's screens in the browser thread."""
        return self.browser.run(lambda page: job(InvoiceScreens(page, self.app_url)))


def build_tools(ui: InvoiceUi) -> tuple[Callable[..., Any], ...]:
    """The journaled tools, compensations and reads, declared with the app's Trash retention."""
    create_invoice, edit_invoice, delete_invoice = _undoable_tools(ui)
    return (
        create_invoice,
        edit_invoice,
        delete_invoice,
        _send_tool(ui),
        *_read_tools(ui),
        *_compensations(ui, create_invoice, edit_invoice, delete_invoice),
    )


def _undoable_tools(
    ui: InvoiceUi,
) -> tuple[Callable[..., Effect], Callable[..., Effect], Callable[..., Effect]]:
    """Create, edit and delete: each undone through the app's own reverse, within Trash retention."""
    window = f"P{ui.retention_days}D"
    moves = f"the invoice moves to the app's Trash, which keeps it {ui.retention_days} days"

    @undoable(window=window, via="ui", side_effects=[moves])
    def create_invoice(customer: Text, amount: Text) -> Effect:
        """Create a Draft invoice through the app's "New invoice" form (amount like 120.50).

        Undo deletes it again (it moves to Trash)."""

        def job(screens: InvoiceScreens) -> Effect:
            invoice_id = screens.create(customer, amount)
            after = _require(screens.listed(invoice_id), invoice_id, "the list")
            return Effect(
                result=_shown(after),
                summary=f"Invoice {invoice_id} created: {_values(after)}",
                resource=ui.uri(invoice_id),
                before=None,
                version=after.fingerprint,
                etag=after.fingerprint,
                fields=_fields(after),
                undo=CreatedInvoice(invoice_id=invoice_id),
            )

        return _acting(ui, job, "a new invoice", f"{ui.server}/invoices")

    @undoable(window=window, via="ui")
    def edit_invoice(
        invoice_id: InvoiceId, customer: Text | None = None, amount: Text | None = None
    ) -> Effect:
        """Change an invoice's customer and/or amount through its edit page.

        Undo types the old values back."""
        values = {
            label: value for label, value in (("Customer", customer), ("Amount", amount)) if value is not None
        }
        if not values:
            raise ToolFailed("give a customer, an amount or both", problem="invalid_input", field="customer")

        def job(screens: InvoiceScreens) -> Effect:
            before = _require(screens.listed(invoice_id), invoice_id, "the list")
            screens.edit(invoice_id, values)
            after = _require(screens.listed(invoice_id), invoice_id, "the list")
            return Effect(
                result=_shown(after),
                summary=summarize(f"Invoice {invoice_id}", before.fields, after.fields),
                **_versions(ui, before, after),
                undo=EditBack(invoice_id=invoice_id, values={k: before.fields[k] for k in values}),
            )

        return _acting(ui, job, f"an edit of {invoice_id}", ui.uri(invoice_id))

    @undoable(window=window, via="ui")
    def delete_invoice(invoice_id: InvoiceId) -> Effect:
        """Delete an invoice: the app moves it to Trash. Undo restores it from Trash while Trash keeps it."""

        def job(screens: InvoiceScreens) -> Effect:
            before = _require(screens.listed(invoice_id), invoice_id, "the list")
            screens.delete(invoice_id)
            after = _require(screens.in_trash(invoice_id), invoice_id, "Trash")
            return Effect(
                result=_shown(after),
                summary=f"Invoice {invoice_id} ({_values(before)}) moved to Trash, "
                f"kept until {after.fields.get('Kept until', '?')}",
                **_versions(ui, before, after),
                undo=DeletedInvoice(invoice_id=invoice_id),
            )

        return _acting(ui, job, f"a delete of {invoice_id}", ui.uri(invoice_id))

    return create_invoice, edit_invoice, delete_invoice


def _send_tool(ui: InvoiceUi) -> Tool:
    """Sending, which the app cannot take back."""

    @irreversible(reason=SEND_REASON, remedy=SEND_REMEDY, via="ui")
    def send_invoice(invoice_id: InvoiceId) -> Effect:
        """Send a Draft invoice to its customer. This cannot be undone."""

        def job(screens: InvoiceScreens) -> Effect:
            before = _require(screens.listed(invoice_id), invoice_id, "the list")
            screens.send(invoice_id)
            after = _require(screens.listed(invoice_id), invoice_id, "the list")
            return Effect(
                result=_shown(after),
                summary=summarize(
                    f"Invoice {invoice_id} sent to {after.fields.get('Customer')};",
                    before.fields,
                    after.fields,
                ),
                **_versions(ui, before, after),
            )

        return _acting(ui, job, f"sending {invoice_id}", ui.uri(invoice_id))

    return send_invoice


def _read_tools(ui: InvoiceUi) -> tuple[Tool, ...]:
    """One invoice, and the list, as a person sees them."""

    @read_only()
    def get_invoice(invoice_id: InvoiceId) -> Effect:
        """Read one invoice as the app shows it, in the list or in Trash, with its fingerprint."""
        view: RecordView | None = ui.screens(lambda screens: screens.find(invoice_id))
        shown = {"invoice": invoice_id, "found": False} if view is None else _shown(view)
        where = "not found" if view is None else f"in {view.table}: {_values(view)}"
        return Effect(
            result=shown,
            summary=f"Read invoice {invoice_id}: {where}",
            resource=ui.uri(invoice_id),
            version=None if view is None else view.fingerprint,
            uses=[Use(resource=ui.uri(invoice_id), version=None if view is None else view.fingerprint)],
        )

    @read_only()
    def list_invoices() -> Effect:
        """List the invoices the app shows (not those in Trash), with their fingerprints."""
        views: list[RecordView] = ui.screens(lambda screens: screens.all_listed())
        return Effect(
            result={"invoices": [_shown(view) for view in views]},
            summary=f"Listed {len(views)} invoice(s)",
            resource=f"{ui.server}/invoices",
            uses=[Use(resource=ui.uri(view.id), version=view.fingerprint) for view in views],
        )

    return get_invoice, list_invoices


def _compensations(
    ui: InvoiceUi,
    create_invoice: Tool,
    edit_invoice: Tool,
    delete_invoice: Tool,
) -> tuple[Callable[..., Undone], ...]:
    """The undo of each undoable tool, replayed on the app's screens, and the state readers that check
    the record before and after."""

    def listed_state(resource: str, tx: Tx) -> ResourceState:
        """The invoice as the list shows it (a created invoice is gone once it is not listed)."""
        invoice_id = resource.rsplit("/", 1)[-1]
        view: RecordView | None = ui.screens(lambda screens: screens.listed(invoice_id))
        return _state(view, _who_changed(ui, invoice_id))

    def found_state(resource: str, tx: Tx) -> ResourceState:
        """The invoice wherever a person would find it: the list, else Trash."""
        invoice_id = resource.rsplit("/", 1)[-1]
        view: RecordView | None = ui.screens(lambda screens: screens.find(invoice_id))
        return _state(view, _who_changed(ui, invoice_id) if view and view.table == INVOICES else None)

    @compensates(create_invoice, state=listed_state)
    def delete_created_invoice(payload: CreatedInvoice) -> Undone:
        """Delete the invoice the call created (the app moves it to Trash)."""

        def replay(screens: InvoiceScreens) -> str | None:
            screens.delete(payload.invoice_id)
            return None

        return _replay(
            ui,
            payload.invoice_id,
            screens_first="list",
            replay=replay,
            side_effects=[f"{payload.invoice_id} moved to the app's Trash"],
        )

    @compensates(edit_invoice, state=listed_state)
    def edit_invoice_back(payload: EditBack) -> Undone:
        """Type the values the invoice had before the call back into its edit page."""

        def replay(screens: InvoiceScreens) -> str | None:
            screens.edit(payload.invoice_id, payload.values)
            view = screens.listed(payload.invoice_id)
            return None if view is None else view.fingerprint

        return _replay(ui, payload.invoice_id, screens_first="list", replay=replay)

    @compensates(delete_invoice, state=found_state)
    def restore_deleted_invoice(payload: DeletedInvoice) -> Undone:
        """Press "Restore" on the invoice in Trash."""

        def replay(screens: InvoiceScreens) -> str | None:
            screens.restore(payload.invoice_id)
            view = screens.listed(payload.invoice_id)
            return None if view is None else view.fingerprint

        return _replay(
            ui,
            payload.invoice_id,
            screens_first="trash",
            replay=replay,
            side_effects=[f"{payload.invoice_id} restored from the app's Trash"],
        )

    return delete_created_invoice, edit_invoice_back, restore_deleted_invoice


# -- helpers shared by the tools --------------------------------------------------------------


def _acting(ui: InvoiceUi, job: Callable[[InvoiceScreens], Effect], what: str, resource: str) -> Effect:
    """Run an acting tool's ``job``. A failure before its form was sent means nothing happened
    (TOOL_FAILED, nothing journaled); after, the app may have changed, and the call is journaled
    without a version, so it is ``unknown`` rather than silently missing (protocol.md §3)."""

    def in_browser(page: Page) -> Effect:
        screens = InvoiceScreens(page, ui.app_url)
        try:
            return job(screens)
        except (ToolFailed, PlaywrightError) as error:
            if not screens.submitted:
                raise
            said = error.message if isinstance(error, ToolFailed) else first_line(error)
            return Effect(
                result={"outcome": "unknown", "problem": said},
                summary=f"Sent {what} to the app, but what it did could not be read back: {said}",
                resource=resource,
            )

    result: Effect = ui.browser.run(in_browser)
    return result


def _replay(
    ui: InvoiceUi,
    invoice_id: str,
    *,
    screens_first: Literal["list", "trash"],
    replay: Callable[[InvoiceScreens], str | None],
    side_effects: list[str] | None = None,
) -> Undone:
    """Screenshot, replay the app's reverse action, screenshot again; evidence either way."""

    def job(page: Page) -> Undone:
        screens = InvoiceScreens(page, ui.app_url)
        evidence: list[str] = []
        try:
            screens.open_trash() if screens_first == "trash" else screens.open_invoices()
            evidence.append(ui.evidence.keep(screens.screenshot(), f"{invoice_id}-before-undo"))
            left = replay(screens)
            evidence.append(ui.evidence.keep(screens.screenshot(), f"{invoice_id}-after-undo"))
        except (ToolFailed, PlaywrightError) as error:
            said = error.message if isinstance(error, ToolFailed) else first_line(error)
            raise UndoFailed(
                f"replaying the undo of {invoice_id} failed: {said}", evidence=evidence
            ) from None
        return Undone(version=left, side_effects=side_effects or [], evidence=evidence)

    result: Undone = ui.browser.run(job)
    return result


def _require(view: RecordView | None, invoice_id: str, where: str) -> RecordView:
    if view is None:
        raise ToolFailed(f"{invoice_id} is not in {where}", problem="not_found", invoice=invoice_id)
    return view


def _fields(view: RecordView) -> dict[str, str]:
    """What a conflict answer compares: where the record is shown and its visible values."""
    return {"Shown in": view.table, **view.fields}


def _versions(ui: InvoiceUi, before: RecordView, after: RecordView) -> dict[str, Any]:
    return {
        "resource": ui.uri(after.id),
        "before": before.fingerprint,
        "before_etag": before.fingerprint,
        "version": after.fingerprint,
        "etag": after.fingerprint,
        "fields": _fields(after),
        "uses": [Use(resource=ui.uri(before.id), version=before.fingerprint)],
    }


def _who_changed(ui: InvoiceUi, invoice_id: str) -> Callable[[], str | None]:
    """Who changed the invoice last, looked up (on its edit page) only if a conflict needs it."""

    def look() -> str | None:
        changed_by: str | None = ui.screens(lambda screens: screens.last_changed_by(invoice_id))
        return changed_by

    return look


def _state(view: RecordView | None, changed_by: Callable[[], str | None] | None) -> ResourceState:
    if view is None:
        return ResourceState(version=None)
    return ResourceState(view.fingerprint, _fields(view), view.fingerprint, changed_by)


def _shown(view: RecordView) -> dict[str, Any]:
    return {
        "invoice": view.id,
        "found": True,
        "shownIn": view.table,
        "fields": dict(view.fields),
        "fingerprint": view.fingerprint,
    }


def _values(view: RecordView) -> str:
    return ", ".join(f"{label} {value}" for label, value in view.fields.items() if label != "Invoice")
