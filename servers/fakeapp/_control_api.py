"""``/_control/...``: a small JSON API over the knobs, mounted only with ``--test-controls``.

Posts must be ``application/json``, which a foreign page cannot send without a CORS preflight
(that this app never answers), so a browser visiting another site cannot turn the knobs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ._controls import Controls
from ._errors import InvalidField, InvoiceNotFound
from ._store import InvoiceStore


class ControlApi:
    """Route handlers for the test-control API."""

    def __init__(self, controls: Controls, store: InvoiceStore) -> None:
        self._controls = controls
        self._store = store

    def routes(self) -> list[Route]:
        """The routes, to mount under ``/_control``."""
        return [
            Route("/state", self.state, methods=["GET"]),
            Route("/layout", self.layout, methods=["POST"]),
            Route("/faulty-restore", self.faulty_restore, methods=["POST"]),
            Route("/clock", self.clock, methods=["POST"]),
            Route("/colleague-edit", self.colleague_edit, methods=["POST"]),
            Route("/invoices/{invoice_id}", self.invoice, methods=["GET"]),
            Route("/reset", self.reset, methods=["POST"]),
        ]

    async def state(self, request: Request) -> Response:
        """GET /_control/state — layout, faulty restore, the app's time, retention."""
        return JSONResponse(self._controls.state())

    async def layout(self, request: Request) -> Response:
        """POST /_control/layout ``{"layout": "b"}``."""
        body = await _json(request)
        self._controls.set_layout(_str(body, "layout"))
        return JSONResponse(self._controls.state())

    async def faulty_restore(self, request: Request) -> Response:
        """POST /_control/faulty-restore ``{"enabled": true}``."""
        body = await _json(request)
        self._controls.set_faulty_restore(_bool(body, "enabled"))
        return JSONResponse(self._controls.state())

    async def clock(self, request: Request) -> Response:
        """POST /_control/clock ``{"advanceDays": 31}`` or ``{"now": "2027-01-31T00:00:00Z"}``."""
        body = await _json(request)
        if "now" in body:
            try:
                now = datetime.fromisoformat(_str(body, "now"))
            except ValueError as exc:
                raise InvalidField("now", "must be an ISO 8601 date and time") from exc
            self._controls.set_clock(now)
        else:
            self._controls.advance_clock(_number(body, "advanceDays"))
        return JSONResponse(self._controls.state())

    async def colleague_edit(self, request: Request) -> Response:
        """POST /_control/colleague-edit ``{"invoice": "INV-0001", "by": "eve@acme.com", …}``.

        Optional fields: ``customer``, ``amount`` (a string like ``"130.00"``), ``status``.
        """
        body = await _json(request)
        optional = {name: _str(body, name) for name in ("customer", "amount", "status") if name in body}
        invoice = self._controls.colleague_edit(_str(body, "invoice"), by=_str(body, "by"), **optional)
        return JSONResponse(self._controls.invoice_json(invoice))

    async def reset(self, request: Request) -> Response:
        """POST /_control/reset ``{}`` — freshly seeded invoices, knobs as started, real time."""
        await _json(request)
        self._controls.reset()
        return JSONResponse(self._controls.state())

    async def invoice(self, request: Request) -> Response:
        """GET /_control/invoices/{id} — ground truth, wherever the invoice is; 404 if gone."""
        invoice_id = str(request.path_params["invoice_id"])
        invoice = self._store.get(invoice_id)
        if invoice is None:
            raise InvoiceNotFound(invoice_id)
        return JSONResponse(self._controls.invoice_json(invoice))


async def _json(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != "application/json":
        raise HTTPException(415, "Control requests must be sent as application/json")
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPException(400, "The body is not valid JSON") from exc
    if not isinstance(body, dict):
        raise HTTPException(400, "The body must be a JSON object")
    return body


def _str(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise InvalidField(name, "must be a string")
    return value


def _bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if not isinstance(value, bool):
        raise InvalidField(name, "must be true or false")
    return value


def _number(body: dict[str, Any], name: str) -> float:
    value = body.get(name)
    # bool is an int in Python; a number field must not accept true/false.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidField(name, "must be a number")
    return float(value)
