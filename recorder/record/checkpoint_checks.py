"""What the verifier checks once every entry is read (``verify.py``): the checkpoints against the
heads seen, the Recorder's pins of the servers' keys, and the latest signed head if given."""

from __future__ import annotations

from collections.abc import Mapping

from hatp_journal.recorder.record.chain import entry_id
from hatp_journal.recorder.record.models import Checkpoint, RunRecordFile
from hatp_journal.recorder.record.report import Check, Findings
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.toolkit.signing import VerifyKey, verify


def check_checkpoints(
    header: RunRecordFile,
    size: int,
    heads: Mapping[int, str],
    recorder_keys: Mapping[str, VerifyKey],
    found: Findings,
) -> int:
    """Check every checkpoint of a record of ``size`` entries; return the largest size a valid one signs."""
    run_id = header.run.id
    signed: int | None = None
    previous = 0
    for checkpoint in header.checkpoints:
        label = entry_id(checkpoint.size) if checkpoint.size else None
        valid = True
        if checkpoint.run != run_id:
            found.add(Check.RUN_MISMATCH, label, f"checkpoint of run {checkpoint.run!r}")
            valid = False
        if not is_wire_time(checkpoint.at):
            found.add(Check.BAD_TIME, label, f"checkpoint time {checkpoint.at!r}")
        if not is_wire_time(checkpoint.receipt.issued_at):
            found.add(Check.BAD_TIME, label, f"checkpoint receipt issuedAt {checkpoint.receipt.issued_at!r}")
        if not verify(checkpoint.receipt, checkpoint.signed(), recorder_keys):
            found.add(Check.BAD_CHECKPOINT_SIGNATURE, label, f"checkpoint at size {checkpoint.size}")
            valid = False
        if checkpoint.size > size:
            found.add(Check.CHECKPOINT_MISMATCH, label, f"signs {checkpoint.size} entries, file has {size}")
            valid = False
        elif heads.get(checkpoint.size) != checkpoint.head:
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
    closes = [c.at for c in header.checkpoints if c.reason == "close"]
    if header.run.closed_at != (closes[0] if closes else None):
        found.add(Check.RUN_MISMATCH, None, "closedAt is not the time of the first close checkpoint")
    return signed or 0


def check_pinned_at(header: RunRecordFile, recorder_keys: Mapping[str, VerifyKey], found: Findings) -> None:
    """Each shipped server key's ``pinnedAt`` is a time, and the Recorder's word: its receipt
    signs the server, the key and that time (``PIN_SIGNATURE_INVALID``). It is compared with
    no other time: pins outlive runs and are written by the Recorder's wall clock."""
    for server, shipped in header.server_keys.items():
        for key in shipped:
            at = key.pinned_at
            if at is None and key.receipt is None:  # keys handed to the export: no pin to sign
                continue
            if at is not None and not is_wire_time(at):
                found.add(Check.BAD_TIME, None, f"serverKeys.{server}: pinnedAt {at!r}")
            receipt = key.receipt
            if receipt is not None and not is_wire_time(receipt.issued_at):
                found.add(Check.BAD_TIME, None, f"serverKeys.{server}: pin receipt issuedAt")
            if (
                at is None
                or receipt is None
                or receipt.issued_at != at
                or not verify(receipt, key.signed(server), recorder_keys)
            ):
                detail = f"serverKeys.{server}: the pin of {key.kid} is not signed by the Recorder's key"
                found.add(Check.PIN_SIGNATURE_INVALID, None, detail)


def check_latest(
    head: Checkpoint,
    header: RunRecordFile,
    size: int,
    heads: Mapping[int, str],
    recorder_keys: Mapping[str, VerifyKey],
    found: Findings,
) -> None:
    """The latest signed head held outside the store: signed, and the file's head at its size."""
    label = entry_id(head.size) if head.size else None
    if head.run != header.run.id:
        found.add(Check.RUN_MISMATCH, None, f"the latest head given is of run {head.run!r}")
    elif not verify(head.receipt, head.signed(), recorder_keys):
        found.add(
            Check.BAD_CHECKPOINT_SIGNATURE, label, "the latest head given is not signed by the Recorder's key"
        )
    elif head.size > size:
        found.add(Check.ROLLBACK, label, f"latest signed head covers {head.size} entries, file {size}")
    elif heads.get(head.size) != head.head:
        found.add(Check.ROLLBACK, label, f"the file's head at size {head.size} is not the latest signed one")
