"""Assembles the Starlette app and maps errors to responses, in one place."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount

from ._control_api import ControlApi
from ._controls import Controls
from ._errors import AlreadySent, InvalidField, InvoiceNotFound
from ._knobs import Knobs
from ._pages import Pages
from ._render import error_page
from ._store import InvoiceStore

_TITLES = {403: "Forbidden", 404: "Not found", 405: "Method not allowed", 409: "Conflict"}


def create_app(store: InvoiceStore, knobs: Knobs, controls: Controls, *, test_controls: bool) -> Starlette:
    """The ASGI app. ``/_control`` exists only when ``test_controls`` is true."""
    routes: list[BaseRoute] = list(Pages(store, knobs).routes())
    if test_controls:
        routes.append(Mount("/_control", routes=ControlApi(controls, store).routes()))

    def respond(
        request: Request,
        status: int,
        message: str,
        code: str,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        if request.url.path.startswith("/_control"):
            body = {"error": code, "message": message}
            return JSONResponse(body, status_code=status, headers=headers)
        page = error_page(_TITLES.get(status, "Error"), message, layout=knobs.layout)
        return HTMLResponse(page, status_code=status, headers=headers)

    async def not_found(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, InvoiceNotFound)
        message = f"There is no invoice {exc.invoice_id} in {exc.where}."
        return respond(request, 404, message, "NOT_FOUND")

    async def already_sent(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AlreadySent)
        message = f"{exc.invoice_id} was already sent; sending cannot be repeated or undone."
        return respond(request, 409, message, "ALREADY_SENT")

    async def invalid_field(request: Request, exc: Exception) -> Response:
        # The pages handle their own form errors; this catches the control API's.
        assert isinstance(exc, InvalidField)
        return JSONResponse(
            {"error": "INVALID_FIELD", "field": exc.field, "message": str(exc)}, status_code=400
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = "NOT_FOUND" if exc.status_code == 404 else f"HTTP_{exc.status_code}"
        return respond(request, exc.status_code, exc.detail, code, exc.headers)

    return Starlette(
        routes=routes,
        exception_handlers={
            InvoiceNotFound: not_found,
            AlreadySent: already_sent,
            InvalidField: invalid_field,
            HTTPException: http_error,
        },
    )
