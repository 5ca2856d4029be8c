"""What a Recorder and a witness say to each other (docs/witness.md), as pydantic models."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import Field

from hatp_journal.recorder.record.models import Checkpoint, Cosignature, Run
from hatp_journal.toolkit.wire import PublicKey, WireModel

MAX_REQUEST_BYTES: Final = 16 << 20
"""The largest cosign request a witness reads; a Recorder sends a run's entries in steps below it."""


class WitnessCode(StrEnum):
    """Stable codes of a witness's refusals (and of a Recorder's reports about witnesses)."""

    WITNESS_BAD_REQUEST = "WITNESS_BAD_REQUEST"
    WITNESS_TOO_LARGE = "WITNESS_TOO_LARGE"
    WITNESS_BAD_SIGNATURE = "WITNESS_BAD_SIGNATURE"
    WITNESS_RECORDER_NOT_ALLOWED = "WITNESS_RECORDER_NOT_ALLOWED"
    WITNESS_RECORDER_CHANGED = "WITNESS_RECORDER_CHANGED"
    WITNESS_STALE_BASE = "WITNESS_STALE_BASE"
    WITNESS_OLD_HEAD = "WITNESS_OLD_HEAD"
    WITNESS_NOT_EXTENDING = "WITNESS_NOT_EXTENDING"
    WITNESS_UNKNOWN_RUN = "WITNESS_UNKNOWN_RUN"
    # Said by the Recorder, never by a witness:
    WITNESS_UNREACHABLE = "WITNESS_UNREACHABLE"
    WITNESS_BAD_ANSWER = "WITNESS_BAD_ANSWER"
    WITNESS_AHEAD_OF_STORE = "WITNESS_AHEAD_OF_STORE"
    WITNESS_PENDING = "WITNESS_PENDING"


class CosignRequest(WireModel):
    """``POST /v1/runs/{run}/cosign``: cosign ``checkpoint``, which extends the head at ``since``.

    ``entries`` are the stored bytes (RFC 8785 canonical JSON, base64url) of entries ``since``+1 …
    ``checkpoint.size``: each must chain to the one before it, the first to the head the witness
    cosigned at ``since`` (or, at 0, to the genesis of ``run``), the last must hash to the new head.
    """

    checkpoint: Checkpoint
    recorder_key: PublicKey
    since: int = Field(ge=0)
    entries: list[str]
    run: Run | None = Field(default=None, description="The run's fields; needed when since is 0")


class WitnessedHead(WireModel):
    """A head the witness cosigned: the Recorder's checkpoint and the witness's cosignature."""

    checkpoint: Checkpoint
    cosignature: Cosignature


class WitnessInfo(WireModel):
    """``GET /v1/witness``: the witness's name and the key its cosignatures verify with."""

    name: str
    key: PublicKey


class WitnessErrorBody(WireModel):
    """What a refusal carries: a code, words, and the witness's latest head of the run if any."""

    code: WitnessCode
    message: str
    head: WitnessedHead | None = None


class WitnessError(WireModel):
    """A refusal's JSON body: ``{"error": {code, message, head?}}``."""

    error: WitnessErrorBody
