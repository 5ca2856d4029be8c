"""Offline verification of an exported Run Record against keys the verifier pinned (SPEC §8).

Every check reports a stable code and the entry it concerns; nothing in a malformed file can
make verification raise. Keys shipped inside the file are compared with the pinned ones, never
trusted on their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hatp_journal.recorder.record.chain import entry_id, genesis_hash, seal
from hatp_journal.recorder.record.layout import Layout, read_export
from hatp_journal.recorder.record.models import Checkpoint, Entry, RunRecordFile
from hatp_journal.recorder.record.receipts import check_receipts
from hatp_journal.recorder.record.report import Check, Findings, VerifyReport
from hatp_journal.toolkit.canonical import canonical_bytes
from hatp_journal.toolkit.signing import VerifyKey, b64url, verify


def verify_record(
    file: RunRecordFile | Mapping[str, Any] | bytes | str,
    *,
    recorder_keys: Mapping[str, VerifyKey],
    server_keys: Mapping[str, Mapping[str, VerifyKey]] | None = None,
    latest_head: Checkpoint | Mapping[str, Any] | None = None,
) -> VerifyReport:
    """Verify a Run Record offline.

    ``file`` is the model, its JSON object, or the exported bytes (then they must also be the
    canonical bytes the Recorder wrote). ``recorder_keys`` and ``server_keys`` (server → kid →
    key) are the verifier's pinned keys. ``latest_head`` is a signed head held outside the
    Recorder's store; without it, a rollback to an older genuine checkpoint cannot be detected.
    Receipts are checked only when ``server_keys`` is given.
    """
    found = Findings()
    loaded = _load(file, found)
    if loaded is None:
        return VerifyReport(ok=False, problems=found.problems)
    record, stored = loaded
    heads = _check_entries(record, stored, found)
    _check_remedies(record, found)
    _check_recorder_key(record, recorder_keys, found)
    signed = _check_checkpoints(record, heads, recorder_keys, found) if heads else 0
    if latest_head is not None and heads:
        _check_latest(latest_head, record.run.id, heads, recorder_keys, found)
    checked = 0
    if server_keys is not None:
        _check_server_keys(record, server_keys, found)
        checked = check_receipts(record.entries, server_keys, found)
    return VerifyReport(
        ok=not found.problems,
        problems=found.problems,
        flagged=found.flagged,
        entries=len(record.entries),
        signed_size=signed,
        receipts_checked=checked,
    )


def _load(file: object, found: Findings) -> tuple[RunRecordFile, list[bytes] | None] | None:
    """The validated record and, for exported bytes laid out canonically, each entry's stored bytes."""
    if isinstance(file, RunRecordFile):
        return file, None
    try:
        if isinstance(file, bytes | str):
            raw, pieces = read_export(file.decode("utf-8") if isinstance(file, bytes) else file)
            record = RunRecordFile.model_validate(raw, strict=True)
            return record, _stored_bytes(pieces, raw, record, found)
        return RunRecordFile.model_validate(file, strict=True), None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        found.add(Check.MALFORMED, None, f"{where or 'file'}: {first['msg']}")
    except (ValueError, RecursionError) as error:
        found.add(Check.MALFORMED, None, f"not a JSON Run Record: {type(error).__name__}")
    return None


def _stored_bytes(
    pieces: Layout | None, raw: Any, record: RunRecordFile, found: Findings
) -> list[bytes] | None:
    """Each entry's bytes as written; NOT_CANONICAL if the file is not what was exported.

    Exports are canonical, so even a byte that parses to the same value (``e``/``E``, the case
    of a hex escape) shows: in an entry it changes the hash, elsewhere this comparison.
    """
    rest = {**raw, "entries": []}
    if pieces is None or pieces.rest != canonical_bytes(rest).decode("utf-8"):
        found.add(Check.NOT_CANONICAL, None, "the bytes are not the canonical form the Recorder wrote")
        return None
    for entry, member in zip(record.entries, pieces.hash_members, strict=True):
        if member != f'"hash":"{entry.hash}"':
            found.add(Check.NOT_CANONICAL, entry.id, "the hash member is not written canonically")
    return pieces.hashed


def _check_entries(record: RunRecordFile, stored: list[bytes] | None, found: Findings) -> list[str]:
    """Check every entry; return the recomputed head at each size (index 0: genesis), or []."""
    run_id = record.run.id
    try:
        genesis = genesis_hash(record.run)
    except (ValueError, TypeError, RecursionError):
        found.add(Check.MALFORMED, None, "run fields are not canonical JSON")
        return []
    heads = [genesis]
    previous_hash, previous_seq = genesis, 0
    for index, entry in enumerate(record.entries):
        label = entry.id
        if entry.run != run_id:
            found.add(Check.RUN_MISMATCH, label, f"entry of run {entry.run!r} in run {run_id!r}")
        if entry.seq != previous_seq + 1:
            found.add(Check.SEQ_GAP, label, f"seq {entry.seq} follows seq {previous_seq}")
        if entry.id != entry_id(entry.seq):
            found.add(Check.ID_MISMATCH, label, f"id {entry.id!r} at seq {entry.seq}")
        recomputed = _rehash(entry, stored[index] if stored is not None else None)
        if not recomputed:
            found.add(Check.MALFORMED, label, "entry is not canonical JSON")
        elif recomputed != entry.hash:
            found.add(Check.HASH_MISMATCH, label, "content does not hash to the recorded hash")
        if entry.prev_hash != previous_hash:
            found.add(Check.CHAIN_BROKEN, label, "prevHash is not the previous entry's hash")
        heads.append(recomputed)
        previous_hash, previous_seq = entry.hash, entry.seq
    return heads


def _check_remedies(record: RunRecordFile, found: Findings) -> None:
    """A remedy names the entry it fixes (`remedies: "e3"`), an earlier entry of this run (SPEC §9)."""
    earlier: set[str] = set()
    for entry in record.entries:
        fixes = entry.body.get("remedies")
        if fixes is not None and (not isinstance(fixes, str) or fixes not in earlier):
            found.add(
                Check.REMEDY_UNKNOWN_ENTRY, entry.id, f"remedies {fixes!r}, not an earlier entry of this run"
            )
        earlier.add(entry.id)


def _rehash(entry: Entry, stored: bytes | None) -> str:
    """The entry's true hash: of the bytes as written when available, else re-serialized; "" if neither."""
    if stored is not None:
        return "sha256:" + hashlib.sha256(stored).hexdigest()
    try:
        return seal(entry.hashed())[1]
    except (ValueError, TypeError, RecursionError):
        return ""


def _check_recorder_key(record: RunRecordFile, pinned: Mapping[str, VerifyKey], found: Findings) -> None:
    shipped = record.recorder_key
    key = pinned.get(shipped.kid)
    if key is None or b64url(key.raw()) != shipped.public_key:
        found.add(Check.KEY_SUBSTITUTED, None, f"recorder key {shipped.kid!r} in the file is not pinned")


def _check_checkpoints(
    record: RunRecordFile, heads: list[str], keys: Mapping[str, VerifyKey], found: Findings
) -> int:
    """Check every checkpoint; return the largest size a valid one signs."""
    run_id, size = record.run.id, len(record.entries)
    signed: int | None = None
    previous = 0
    for checkpoint in record.checkpoints:
        label = entry_id(checkpoint.size) if checkpoint.size else None
        valid = True
        if checkpoint.run != run_id:
            found.add(Check.RUN_MISMATCH, label, f"checkpoint of run {checkpoint.run!r}")
            valid = False
        if not verify(checkpoint.receipt, checkpoint.signed(), keys):
            found.add(Check.BAD_CHECKPOINT_SIGNATURE, label, f"checkpoint at size {checkpoint.size}")
            valid = False
        if checkpoint.size > size:
            found.add(Check.CHECKPOINT_MISMATCH, label, f"signs {checkpoint.size} entries, file has {size}")
            valid = False
        elif heads[checkpoint.size] != checkpoint.head:
            found.add(Check.CHECKPOINT_MISMATCH, label, f"signed head differs at size {checkpoint.size}")
            valid = False
        if checkpoint.size < previous:
            found.add(Check.CHECKPOINT_MISMATCH, label, f"size {checkpoint.size} signed after {previous}")
        previous = max(previous, checkpoint.size)
        if valid:
            signed = max(signed or 0, checkpoint.size)
    if signed is None or signed < size:
        start = (signed or 0) + 1
        label = entry_id(start) if start <= size else None
        found.add(Check.UNSIGNED_TAIL, label, f"entries after the last signed checkpoint ({signed})")
    closes = [c.at for c in record.checkpoints if c.reason == "close"]
    if record.run.closed_at != (closes[0] if closes else None):
        found.add(Check.RUN_MISMATCH, None, "closedAt is not the time of the first close checkpoint")
    return signed or 0


def _check_latest(
    latest: Checkpoint | Mapping[str, Any],
    run_id: str,
    heads: list[str],
    keys: Mapping[str, VerifyKey],
    found: Findings,
) -> None:
    try:
        head = latest if isinstance(latest, Checkpoint) else Checkpoint.model_validate(latest, strict=True)
    except ValidationError:
        found.add(Check.MALFORMED, None, "the latest head given is not a checkpoint")
        return
    label = entry_id(head.size) if head.size else None
    if head.run != run_id:
        found.add(Check.RUN_MISMATCH, None, f"the latest head given is of run {head.run!r}")
    elif not verify(head.receipt, head.signed(), keys):
        found.add(
            Check.BAD_CHECKPOINT_SIGNATURE, label, "the latest head given is not signed by a pinned key"
        )
    elif head.size >= len(heads):
        found.add(
            Check.ROLLBACK, label, f"latest signed head covers {head.size} entries, file {len(heads) - 1}"
        )
    elif heads[head.size] != head.head:
        found.add(Check.ROLLBACK, label, f"the file's head at size {head.size} is not the latest signed one")


def _check_server_keys(
    record: RunRecordFile, pinned: Mapping[str, Mapping[str, VerifyKey]], found: Findings
) -> None:
    for server, keys in record.server_keys.items():
        for shipped in keys:
            key = pinned.get(server, {}).get(shipped.kid)
            if key is None or b64url(key.raw()) != shipped.public_key:
                found.add(Check.KEY_SUBSTITUTED, None, f"key {shipped.kid!r} of {server!r} is not pinned")
