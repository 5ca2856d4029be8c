"""The app's own pages and form posts. Every change is a POST answered by a 303 redirect."""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ._errors import InvalidField
from ._invoice import parse_amount, parse_customer, parse_invoice_id
from ._knobs import Knobs
from ._render import FormState, edit_page, invoices_page, trash_page
from ._store import APP_USER, Changes, InvoiceStore

_MAX_FORM_BYTES: Final = 10_000
_FORM_TYPE: Final = "application/x-www-form-urlencoded"
# What the redirect's ``done`` parameter may say; anything else shows no message.
_DONE: Final = {
    "created": "{} created.",
    "saved": "{} saved.",
    "sent": "{} sent.",
    "deleted": "{} moved to Trash.",
    "restored": "{} restored.",
}


class Pages:
    """Route handlers for the invoice list, the edit form and Trash."""

    def __init__(self, store: InvoiceStore, knobs: Knobs) -> None:
        self._store = store
        self._knobs = knobs

    def routes(self) -> list[Route]:
        """The routes, to mount at the root."""
        return [
            Route("/", self.list_invoices, methods=["GET"]),
            Route("/invoices", self.create, methods=["POST"]),
            Route("/invoices/{invoice_id}/edit", self.edit_form, methods=["GET"]),
            Route("/invoices/{invoice_id}", self.save, methods=["POST"]),
            Route("/invoices/{invoice_id}/send", self.send, methods=["POST"]),
            Route("/invoices/{invoice_id}/delete", self.delete, methods=["POST"]),
            Route("/trash", self.trash, methods=["GET"]),
            Route("/trash/{invoice_id}/restore", self.restore, methods=["POST"]),
        ]

    async def list_invoices(self, request: Request) -> Response:
        """GET / — the invoice list and the "New invoice" form."""
        return self._list(request, FormState(), status_code=200)

    async def create(self, request: Request) -> Response:
        """POST /invoices — add a Draft invoice; 400 with the form refilled if a field is bad."""
        form = await _read_form(request)
        try:
            customer = parse_customer(form.get("customer", ""))
            amount = parse_amount(form.get("amount", ""))
        except InvalidField as exc:
            return self._list(request, FormState(form, exc), status_code=400)
        invoice = self._store.create(customer=customer, amount=amount, by=APP_USER)
        return _done("/", "created", invoice.id)

    async def edit_form(self, request: Request) -> Response:
        """GET /invoices/{id}/edit — the edit form (404 if not in the list)."""
        invoice = self._store.require_active(_invoice_id(request))
        return HTMLResponse(edit_page(invoice, layout=self._knobs.layout, form=FormState()))

    async def save(self, request: Request) -> Response:
        """POST /invoices/{id} — save customer and amount; 400 names the bad field."""
        form = await _read_form(request)
        invoice = self._store.require_active(_invoice_id(request))
        try:
            changes = Changes(
                customer=parse_customer(form.get("customer", "")),
                amount=parse_amount(form.get("amount", "")),
            )
        except InvalidField as exc:
            page = edit_page(invoice, layout=self._knobs.layout, form=FormState(form, exc))
            return HTMLResponse(page, status_code=400)
        self._store.edit(invoice.id, changes, by=APP_USER)
        return _done("/", "saved", invoice.id)

    async def send(self, request: Request) -> Response:
        """POST /invoices/{id}/send — mark Sent. The app offers no way back."""
        await _read_form(request)
        invoice = self._store.send(_invoice_id(request), by=APP_USER)
        return _done("/", "sent", invoice.id)

    async def delete(self, request: Request) -> Response:
        """POST /invoices/{id}/delete — move to Trash."""
        await _read_form(request)
        invoice = self._store.delete(_invoice_id(request), by=APP_USER)
        return _done("/", "deleted", invoice.id)

    async def trash(self, request: Request) -> Response:
        """GET /trash — deleted invoices with when each is purged."""
        store = self._store
        items = [(inv, until) for inv in store.trash() if (until := store.kept_until(inv))]
        page = trash_page(
            items,
            retention_days=self._store.retention_days,
            layout=self._knobs.layout,
            message=_message(request),
        )
        return HTMLResponse(page)

    async def restore(self, request: Request) -> Response:
        """POST /trash/{id}/restore — bring back from Trash (or, faulty, only say so)."""
        await _read_form(request)
        invoice_id = _invoice_id(request)
        if self._knobs.faulty_restore:
            # The fault under test: same checks and same success answer, but nothing changes.
            self._store.require_in_trash(invoice_id)
        else:
            self._store.restore(invoice_id, by=APP_USER)
        return _done("/trash", "restored", invoice_id)

    def _list(self, request: Request, form: FormState, *, status_code: int) -> Response:
        page = invoices_page(
            self._store.active(),
            layout=self._knobs.layout,
            message=_message(request) if form.error is None else None,
            form=form,
        )
        return HTMLResponse(page, status_code=status_code)


def _invoice_id(request: Request) -> str:
    invoice_id = str(request.path_params["invoice_id"])
    if parse_invoice_id(invoice_id) is None:
        raise HTTPException(404, f"There is no invoice {invoice_id}")
    return invoice_id


async def _read_form(request: Request) -> dict[str, str]:
    """Check where a form post comes from and decode it (first value of each field)."""
    _check_origin(request)
    content_type = request.headers.get("content-type", _FORM_TYPE).split(";")[0].strip()
    if content_type != _FORM_TYPE:
        raise HTTPException(415, f"Forms must be sent as {_FORM_TYPE}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM_BYTES:
            raise HTTPException(413, "The form is too large")
    form: dict[str, str] = {}
    for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        form.setdefault(key, value)
    return form


def _check_origin(request: Request) -> None:
    # No tokens and no cookies here, so the cross-site risk is a foreign page posting a form:
    # browsers say where a post comes from, and we refuse anything not from this origin.
    origin = request.headers.get("origin")
    if request.headers.get("sec-fetch-site") == "cross-site" or (
        origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host')}"
    ):
        raise HTTPException(403, "Form posts are accepted only from this app's own pages")


def _done(path: str, what: str, invoice_id: str) -> Response:
    return RedirectResponse(f"{path}?{urlencode({'done': what, 'invoice': invoice_id})}", status_code=303)


def _message(request: Request) -> str | None:
    template = _DONE.get(request.query_params.get("done", ""))
    invoice_id = request.query_params.get("invoice", "")
    if template is None or parse_invoice_id(invoice_id) is None:
        return None
    return template.format(invoice_id)
