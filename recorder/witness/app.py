"""The witness's HTTP API (docs/witness.md): who it is, a run's latest cosigned head, cosign a head."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.witness.cosign import Refusal, Witness
from hatp_journal.recorder.witness.wire import (
    MAX_REQUEST_BYTES,
    CosignRequest,
    WitnessCode,
    WitnessError,
    WitnessErrorBody,
    WitnessInfo,
)

_STATUS = {
    WitnessCode.WITNESS_BAD_REQUEST: 400,
    WitnessCode.WITNESS_TOO_LARGE: 413,
    WitnessCode.WITNESS_BAD_SIGNATURE: 422,
    WitnessCode.WITNESS_RECORDER_NOT_ALLOWED: 403,
    WitnessCode.WITNESS_RECORDER_CHANGED: 409,
    WitnessCode.WITNESS_STALE_BASE: 409,
    WitnessCode.WITNESS_OLD_HEAD: 409,
    WitnessCode.WITNESS_NOT_EXTENDING: 409,
    WitnessCode.WITNESS_UNKNOWN_RUN: 404,
}


def witness_app(witness: Witness) -> Starlette:
    """The ASGI app of ``witness``."""

    async def info(request: Request) -> Response:
        return _json(WitnessInfo(name=witness.name, key=witness.key.public.wire()).wire())

    async def head(request: Request) -> Response:
        run = request.path_params["run"]
        latest = await anyio.to_thread.run_sync(witness.store.latest, run)
        if latest is None:
            return _refused(
                Refusal(WitnessCode.WITNESS_UNKNOWN_RUN, f"no head of run {run!r} is cosigned here")
            )
        return _json(latest.wire())

    async def cosign(request: Request) -> Response:
        run = request.path_params["run"]
        try:
            body = await _body(request)
            try:
                asked = CosignRequest.model_validate_json(body, strict=True)
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(part) for part in first["loc"]) or "body"
                raise Refusal(WitnessCode.WITNESS_BAD_REQUEST, f"{where}: {first['msg']}") from None
            answer = await anyio.to_thread.run_sync(witness.cosign, run, asked)
        except Refusal as refusal:
            return _refused(refusal)
        return _json(answer.wire())

    return Starlette(
        routes=[
            Route("/v1/witness", info, methods=["GET"]),
            Route("/v1/runs/{run}/head", head, methods=["GET"]),
            Route("/v1/runs/{run}/cosign", cosign, methods=["POST"]),
        ]
    )


async def _body(request: Request) -> bytes:
    """The request's body, refused past :data:`MAX_REQUEST_BYTES` without reading the rest."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise Refusal(WitnessCode.WITNESS_TOO_LARGE, f"more than {MAX_REQUEST_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise Refusal(WitnessCode.WITNESS_TOO_LARGE, f"more than {MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(value: Any, status: int = 200) -> Response:
    return Response(canonical_bytes(value), status_code=status, media_type="application/json")


def _refused(refusal: Refusal) -> Response:
    body = WitnessError(error=WitnessErrorBody(code=refusal.code, message=refusal.message, head=refusal.head))
    return _json(body.wire(), _STATUS[refusal.code])
