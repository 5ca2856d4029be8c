"""The Run Record as it travels: pydantic models with camelCase aliases (protocol.md §8).

The JSON Schema of :class:`RunRecordFile` is published as ``docs/schema/run-record.schema.json``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.toolkit.wire import PublicKey, Receipt, WireModel

RECORD_FORMAT: Final = "hatp-run-record/2"
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


class Cosignature(WireModel):
    """A witness's signature that it saw the Recorder's head ``head`` at ``size`` of ``run``, and
    that every head it cosigned for the run before is a prefix of it (docs/witness.md)."""

    witness: str = Field(min_length=1, max_length=200)
    run: str
    size: int = Field(ge=0)
    head: str
    recorder_kid: str
    receipt: Receipt

    def signed(self) -> dict[str, Any]:
        """What the witness's receipt signs."""
        return cosignature_payload(self.witness, self.run, self.size, self.head, self.recorder_kid)


def cosignature_payload(witness: str, run: str, size: int, head: str, recorder_kid: str) -> dict[str, Any]:
    """The payload of a cosignature: ``{"cosignature": {witness, run, size, head, recorderKid}}``."""
    return {
        "cosignature": {
            "witness": witness,
            "run": run,
            "size": size,
            "head": head,
            "recorderKid": recorder_kid,
        }
    }


class PinnedKey(WireModel):
    """A tool server's receipt key as the Recorder pinned it, and since when."""

    kid: str
    alg: Literal["Ed25519"] = "Ed25519"
    public_key: str = Field(description="Raw 32-byte Ed25519 public key, base64url, no padding")
    pinned_at: str | None = Field(default=None, description="When the Recorder first pinned it")
    receipt: Receipt | None = Field(
        default=None,
        description="The Recorder's signature over the pin (server, key and pinnedAt), issued at pinnedAt",
    )

    def public(self) -> PublicKey:
        """The key without its pinning time."""
        return PublicKey(kid=self.kid, alg=self.alg, public_key=self.public_key)

    def signed(self, server: str) -> dict[str, Any]:
        """What the Recorder's pin receipt signs."""
        return pin_payload(server, self.public(), self.pinned_at)


def pin_payload(server: str, key: PublicKey, pinned_at: str | None) -> dict[str, Any]:
    """The payload of a pin receipt: ``{"pin": {server, kid, alg, publicKey, pinnedAt}}``."""
    return {"pin": {"server": server, **key.wire(), "pinnedAt": pinned_at}}


class RunRecordFile(WireModel):
    """A self-contained Run Record: the run, its entries as stored, every checkpoint, the keys
    that verify it and the directory as it stood at each decision.

    Shipped keys are what the Recorder pinned; a verifier that pinned its own checks against
    those, and reports a shipped key that differs. ``directories`` maps each decision's
    ``directory`` digest to the directory it names. It carries no compensation token: entries
    name tokens by digest only.
    """

    format: Literal["hatp-run-record/2"] = RECORD_FORMAT
    run: Run
    entries: list[Entry]
    checkpoints: list[Checkpoint]
    recorder_key: PublicKey
    server_keys: dict[str, list[PinnedKey]] = Field(default_factory=dict)
    directories: dict[str, dict[str, Any]] = Field(default_factory=dict)
    cosignatures: list[Cosignature] | None = Field(
        default=None,
        description="Witnesses' cosignatures of the run's signed heads, by size then witness "
        "(absent when no witness cosigned one; docs/witness.md)",
    )

    def to_bytes(self) -> bytes:
        """The file as written: RFC 8785 canonical JSON, so any changed byte is detectable."""
        return canonical_bytes(self.wire())


def record_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`RunRecordFile`, in serialization (wire) mode."""
    return RunRecordFile.model_json_schema(by_alias=True, mode="serialization")
