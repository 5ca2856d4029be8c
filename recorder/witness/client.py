"""Speaking to a witness over HTTP (docs/witness.md), for the Recorder and for ``verify``.

The standard library's client: ``verify`` runs where only the toolkit is installed, and the
Recorder calls from its sender thread.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import quote

from pydantic import ValidationError

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.witness.wire import (
    CosignRequest,
    WitnessCode,
    WitnessedHead,
    WitnessError,
    WitnessErrorBody,
)

MAX_ANSWER_BYTES = 1 << 20
"""The largest answer read from a witness: a head and a cosignature are a few hundred bytes."""


class Unreachable(Exception):
    """The witness did not answer, or not in its protocol (a code the Recorder reports)."""

    def __init__(self, code: WitnessCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def head_url(base: str, run: str) -> str:
    """Where a witness answers its latest cosigned head of ``run``."""
    return f"{base.rstrip('/')}/v1/runs/{quote(run, safe='')}/head"


def latest_head(base: str, run: str, timeout: float) -> WitnessedHead | WitnessErrorBody:
    """The witness's latest cosigned head of ``run``, or its refusal (``WITNESS_UNKNOWN_RUN``)."""
    return _answer(_call(urllib.request.Request(head_url(base, run)), timeout))


def send_cosign(
    base: str, run: str, request: CosignRequest, timeout: float
) -> WitnessedHead | WitnessErrorBody:
    """Ask the witness to cosign; its cosigned head, or its refusal."""
    url = f"{base.rstrip('/')}/v1/runs/{quote(run, safe='')}/cosign"
    body = canonical_bytes(request.wire())
    asked = urllib.request.Request(
        url, data=body, method="POST", headers={"content-type": "application/json"}
    )
    return _answer(_call(asked, timeout))


def _call(request: urllib.request.Request, timeout: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            # A file: URL (a witness's answers kept as files, docs/witness.md) has no status.
            return response.status or 200, response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read(MAX_ANSWER_BYTES + 1)
    except (OSError, ValueError) as error:  # refused, reset, timed out, a URL it cannot open
        reason = getattr(error, "reason", error)
        raise Unreachable(WitnessCode.WITNESS_UNREACHABLE, f"{request.full_url}: {reason}") from None


def _answer(answer: tuple[int, bytes]) -> WitnessedHead | WitnessErrorBody:
    status, body = answer
    try:
        if len(body) > MAX_ANSWER_BYTES:
            raise ValueError("answer too large")
        if status == 200:
            return WitnessedHead.model_validate_json(body, strict=True)
        return WitnessError.model_validate_json(body, strict=True).error
    except (ValueError, ValidationError):
        if status >= 500:
            raise Unreachable(WitnessCode.WITNESS_UNREACHABLE, f"HTTP {status} from the witness") from None
        raise Unreachable(WitnessCode.WITNESS_BAD_ANSWER, f"HTTP {status}: not a witness's answer") from None
