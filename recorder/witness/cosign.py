"""The witness's decision: cosign a head only if it extends the last head cosigned for its run.

Extension is checked by the hash chain itself: the request carries the stored bytes of every entry
between the two heads, so the witness recomputes each entry's hash and follows ``prevHash`` from the
head it holds to the head it is asked to cosign. Nothing of the entries is kept but the new head.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from datetime import datetime

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.record.chain import genesis_hash
from hatp_journal.recorder.record.models import Cosignature, cosignature_payload
from hatp_journal.recorder.witness.store import WitnessStore
from hatp_journal.recorder.witness.wire import CosignRequest, WitnessCode, WitnessedHead
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, b64url, b64url_decode, verify


class Refusal(Exception):
    """A head the witness will not cosign: a stable code, words, and its own latest head if any."""

    def __init__(self, code: WitnessCode, message: str, head: WitnessedHead | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.head = head


class Witness:
    """Cosigns heads for any number of runs; one decision at a time (the store is the arbiter)."""

    def __init__(
        self,
        name: str,
        key: SigningKey,
        store: WitnessStore,
        *,
        recorder_keys: Mapping[str, VerifyKey] | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.name = name
        self.key = key
        self.store = store
        self.recorder_keys = recorder_keys  # None: any Recorder, pinned per run at its first head
        self.clock = clock
        self._lock = threading.Lock()

    def cosign(self, run: str, request: CosignRequest) -> WitnessedHead:
        """Cosign ``request.checkpoint`` or raise :class:`Refusal`; the same head again, the same answer."""
        checkpoint = request.checkpoint
        if checkpoint.run != run:
            raise Refusal(WitnessCode.WITNESS_BAD_REQUEST, f"the checkpoint is of run {checkpoint.run!r}")
        recorder = _recorder_key(request)
        if not verify(checkpoint.receipt, checkpoint.signed(), {recorder.kid: recorder}):
            raise Refusal(WitnessCode.WITNESS_BAD_SIGNATURE, "the checkpoint is not signed by recorderKey")
        if self.recorder_keys is not None and recorder.kid not in self.recorder_keys:
            raise Refusal(
                WitnessCode.WITNESS_RECORDER_NOT_ALLOWED,
                f"Recorder key {recorder.kid} is not one this witness serves",
            )
        with self._lock:
            latest = self.store.latest(run)
            answer = self._decide(run, request, recorder.kid, latest)
            if answer is latest:
                return answer
            if not self.store.keep(answer):  # another process of this witness kept one first
                raise Refusal(
                    WitnessCode.WITNESS_STALE_BASE,
                    "another head was cosigned meanwhile",
                    self.store.latest(run),
                )
            return answer

    def _decide(
        self, run: str, request: CosignRequest, kid: str, latest: WitnessedHead | None
    ) -> WitnessedHead:
        checkpoint = request.checkpoint
        if latest is not None:
            held = latest.cosignature
            if held.recorder_kid != kid:
                raise Refusal(
                    WitnessCode.WITNESS_RECORDER_CHANGED,
                    f"run {run!r} is signed by Recorder key {held.recorder_kid}",
                    latest,
                )
            if (checkpoint.size, checkpoint.head) == (held.size, held.head):
                return latest  # a retry of the head cosigned last
            if checkpoint.size < held.size:
                raise Refusal(
                    WitnessCode.WITNESS_OLD_HEAD,
                    f"size {checkpoint.size} is behind the cosigned {held.size}",
                    latest,
                )
            if checkpoint.size == held.size:
                raise Refusal(
                    WitnessCode.WITNESS_NOT_EXTENDING,
                    f"another head at the cosigned size {held.size}",
                    latest,
                )
            if request.since != held.size:
                raise Refusal(
                    WitnessCode.WITNESS_STALE_BASE,
                    f"since {request.since}, the cosigned head is at {held.size}",
                    latest,
                )
            base = held.head
        else:
            if request.since != 0:
                raise Refusal(
                    WitnessCode.WITNESS_STALE_BASE,
                    f"since {request.since}: nothing of run {run!r} is cosigned here",
                )
            if request.run is None or request.run.id != run:
                raise Refusal(
                    WitnessCode.WITNESS_BAD_REQUEST, "the first head of a run comes with the run's fields"
                )
            base = genesis_hash(request.run)
        _follow(run, base, request)
        at = wire_time(self.clock())
        payload = cosignature_payload(self.name, run, checkpoint.size, checkpoint.head, kid)
        cosignature = Cosignature(
            witness=self.name,
            run=run,
            size=checkpoint.size,
            head=checkpoint.head,
            recorder_kid=kid,
            receipt=self.key.sign(payload, at),
        )
        return WitnessedHead(checkpoint=checkpoint, cosignature=cosignature)


def _recorder_key(request: CosignRequest) -> VerifyKey:
    try:
        key = VerifyKey.from_wire(request.recorder_key)
    except (KeyFileError, ValueError):
        raise Refusal(
            WitnessCode.WITNESS_BAD_SIGNATURE, "recorderKey is not a published Ed25519 key"
        ) from None
    if request.checkpoint.receipt.kid != key.kid:
        raise Refusal(
            WitnessCode.WITNESS_BAD_SIGNATURE, "the checkpoint is signed by another key than recorderKey"
        )
    return key


def _follow(run: str, base: str, request: CosignRequest) -> None:
    """Follow the chain from ``base`` through the entries sent to the new head, or refuse."""
    checkpoint = request.checkpoint
    if len(request.entries) != checkpoint.size - request.since:
        raise Refusal(
            WitnessCode.WITNESS_BAD_REQUEST,
            f"{len(request.entries)} entries sent, {checkpoint.size - request.since} between the heads",
        )
    previous = base
    for offset, text in enumerate(request.entries):
        seq = request.since + offset + 1
        data = _entry_bytes(text, seq)
        try:
            entry = json.loads(data)
            canonical = isinstance(entry, dict) and canonical_bytes(entry) == data
        except (ValueError, TypeError, RecursionError):
            canonical = False
        if not canonical:
            raise Refusal(WitnessCode.WITNESS_BAD_REQUEST, f"entry {seq}: not an entry in canonical JSON")
        if entry.get("run") != run or entry.get("seq") != seq:
            raise Refusal(WitnessCode.WITNESS_NOT_EXTENDING, f"entry {seq}: not entry {seq} of run {run!r}")
        if entry.get("prevHash") != previous:
            raise Refusal(
                WitnessCode.WITNESS_NOT_EXTENDING, f"entry {seq}: does not follow the head before it"
            )
        previous = "sha256:" + hashlib.sha256(data).hexdigest()
    if previous != checkpoint.head:
        raise Refusal(WitnessCode.WITNESS_NOT_EXTENDING, "the entries sent do not end in the head to cosign")


def _entry_bytes(text: str, seq: int) -> bytes:
    try:
        data = b64url_decode(text)
    except (ValueError, binascii.Error):
        data = None
    if data is None or b64url(data) != text:
        raise Refusal(WitnessCode.WITNESS_BAD_REQUEST, f"entry {seq}: not base64url")
    return data
