"""What a forger of Run Records holds and does: the keys (:class:`Signers`), one lie described
(:class:`Forgery`), and the re-chaining a holder of the Recorder's key can do after editing an entry.

Only the toolkit is imported: the forgeries do not lean on the Recorder's code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.toolkit.signing import SigningKey

Record = dict[str, Any]


@dataclass(frozen=True)
class Signers:
    """The private keys a forger may hold: always the Recorder's, sometimes a person's."""

    recorder: SigningKey
    people: dict[str, SigningKey]


@dataclass(frozen=True)
class Forgery:
    """One lie: how to tell it, and the codes a verifier must report for it."""

    name: str
    lie: str
    codes: tuple[str, ...]
    """What a verifier that pinned every key and the directory reports (``docs/run-record.md``)."""
    forge: Callable[[Record, Signers], Record]
    with_head: bool = False
    """The verifier is given the latest signed head (without it, the lie cannot show)."""
    codes_from_file: tuple[str, ...] | None = None
    """What a verifier that pinned nothing reports, where it differs (trust on first use)."""
    flagged: tuple[str, ...] = ()
    """Problems flagged, not counted: failures the Recorder itself recorded (shown, and failing the
    command line unless it is told to accept them)."""
    directory: Callable[[Record], Record] | None = None
    """The directory the verifier pins for this file, made from the genuine one (None: the genuine)."""
    rewrites_history: bool = True
    """Made by a holder of the Recorder's key (so, given the latest head, it is also ``ROLLBACK``)."""


# -- re-chaining, as a holder of the Recorder's key would ---------------------------------------


def entry_hash(entry: Record) -> str:
    """``sha256:`` of the canonical bytes of every member but ``hash``."""
    hashed = {k: v for k, v in entry.items() if k != "hash"}
    return "sha256:" + hashlib.sha256(canonical_bytes(hashed)).hexdigest()


def genesis(run: Record) -> str:
    """The ``prevHash`` of entry 1."""
    fields = {"genesis": True, "run": run["id"], "agent": run["agent"], "principal": run["principal"]}
    return sha256_digest({**fields, "openedAt": run["openedAt"]})


def rechain(record: Record, recorder: SigningKey, *, broken: str | None = None) -> Record:
    """Every hash and link recomputed, every checkpoint re-signed over the new heads (but the link
    into entry ``broken``, which is left pointing nowhere)."""
    previous = genesis(record["run"])
    heads = [previous]
    for entry in record["entries"]:
        entry["prevHash"] = "sha256:" + "0" * 64 if entry["id"] == broken else previous
        entry["hash"] = previous = entry_hash(entry)
        heads.append(previous)
    for checkpoint in record["checkpoints"]:
        checkpoint["head"] = heads[checkpoint["size"]]
        sign_checkpoint(checkpoint, recorder)
    return record


def sign_checkpoint(checkpoint: Record, key: SigningKey) -> None:
    payload = {k: checkpoint[k] for k in ("run", "size", "head", "at", "reason")}
    checkpoint["receipt"] = key.sign({"checkpoint": payload}, checkpoint["at"]).wire()


def sign_pin(server: str, key: Record, recorder: SigningKey) -> None:
    """The Recorder's receipt over a shipped key's pin, issued at its ``pinnedAt``."""
    pin = {"server": server, **{k: key[k] for k in ("alg", "kid", "publicKey", "pinnedAt")}}
    key["receipt"] = recorder.sign({"pin": pin}, key["pinnedAt"]).wire()


def entry(record: Record, kind: str, nth: int = 1) -> Record:
    """The ``nth`` entry of ``kind``."""
    found: Record = [e for e in record["entries"] if e["kind"] == kind][nth - 1]
    return found
