"""The Run Record as it travels: pydantic models with camelCase aliases (SPEC §8).

The JSON Schema of :class:`RunRecordFile` is published as ``docs/schema/run-record.schema.json``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from hatp_journal.toolkit.canonical import canonical_bytes
from hatp_journal.toolkit.wire import PublicKey, Receipt, WireModel

RECORD_FORMAT: Final = "hatp-run-record/1"
"""The ``format`` of an exported Run Record file."""


class Run(WireModel):
    """One agent session. ``closedAt`` is the time of its first ``close`` checkpoint."""

    id: str = Field(min_length=1)
    agent: str
    principal: str
    opened_at: str
    closed_at: str | None = None


class Entry(WireModel):
    """One journaled event. ``hash`` covers every other field, ``prevHash`` links the chain."""

    id: str
    run: str
    seq: int = Field(ge=1)
    time: str
    kind: str = Field(min_length=1)
    body: dict[str, Any]
    prev_hash: str
    hash: str

    def hashed(self) -> dict[str, Any]:
        """The object whose RFC 8785 bytes are stored and hashed: every field but ``hash``."""
        return {
            "run": self.run,
            "seq": self.seq,
            "id": self.id,
            "time": self.time,
            "kind": self.kind,
            "body": self.body,
            "prevHash": self.prev_hash,
        }


class Checkpoint(WireModel):
    """A chain head signed by the Recorder: the first ``size`` entries end in ``head``."""

    run: str
    size: int = Field(ge=0)
    head: str
    at: str
    reason: str
    receipt: Receipt

    def signed(self) -> dict[str, Any]:
        """What the Recorder's receipt signs."""
        return checkpoint_payload(self.run, self.size, self.head, self.at, self.reason)


def checkpoint_payload(run: str, size: int, head: str, at: str, reason: str) -> dict[str, Any]:
    """The payload of a checkpoint receipt: ``{"checkpoint": {run, size, head, at, reason}}``."""
    return {"checkpoint": {"run": run, "size": size, "head": head, "at": at, "reason": reason}}


class RunRecordFile(WireModel):
    """A self-contained Run Record: the run, its entries as stored, every checkpoint, and keys.

    The keys shipped here are informational: a verifier checks signatures against keys it
    pinned itself, and reports a shipped key that differs from the pinned one.
    """

    format: Literal["hatp-run-record/1"] = RECORD_FORMAT
    run: Run
    entries: list[Entry]
    checkpoints: list[Checkpoint]
    recorder_key: PublicKey
    server_keys: dict[str, list[PublicKey]] = Field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """The file as written: RFC 8785 canonical JSON, so any changed byte is detectable."""
        return canonical_bytes(self.wire())


def record_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`RunRecordFile`, in serialization (wire) mode."""
    return RunRecordFile.model_json_schema(by_alias=True, mode="serialization")
