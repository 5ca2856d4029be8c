"""Sending each signed head to the witnesses the config names, and keeping their cosignatures.

A thread watches the store for checkpoints signed by any process on it (``RunStore.signed_since``),
and for each run and witness sends the run's latest signed head with the entries since the head the
witness last cosigned (docs/witness.md). A witness that does not answer, or refuses, is retried with
a doubling wait; each failure is kept in ``rec_witness_due`` and said on stderr with its code. A head
is never dropped: what is owed is read from the store itself (the latest checkpoint of a run against
the cosignatures kept), so a Recorder started again sends what an earlier one could not.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal._shared.text import shown
from hatp_journal.recorder.config import ConfigError, WitnessConfig
from hatp_journal.recorder.record.chain import genesis_hash
from hatp_journal.recorder.record.key_files import pinned_key
from hatp_journal.recorder.record.models import Checkpoint, Cosignature
from hatp_journal.recorder.record.store import RunStore
from hatp_journal.recorder.record.witnessed import Due, dues, keep_cosignature, latest_cosigned, note_due
from hatp_journal.recorder.witness.client import Unreachable, latest_head, send_cosign
from hatp_journal.recorder.witness.wire import MAX_REQUEST_BYTES, CosignRequest, WitnessCode, WitnessedHead
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey, b64url, verify

_T = TypeVar("_T")

MAX_RETRY_SECONDS = 3600.0
"""The longest wait between two attempts to have a head cosigned, whatever the config says."""
_STEP_BYTES = MAX_REQUEST_BYTES // 2
"""Entries sent in one request at most (base64 adds a third): larger gaps go checkpoint by checkpoint."""
_STALE_ATTEMPTS = 3
"""How often a request is made again when the witness cosigned another head meanwhile."""


def witness_keys(witnesses: Sequence[WitnessConfig]) -> dict[str, VerifyKey]:
    """Each witness's pinned public key, by name; a key that cannot be read is a ConfigError."""
    keys: dict[str, VerifyKey] = {}
    for witness in witnesses:
        try:
            keys[witness.name] = pinned_key(Path(witness.key))
        except KeyFileError as error:
            raise ConfigError(f"witness {witness.name}: {error}") from None
    return keys


class Refused(Exception):
    """One attempt that did not end in a kept cosignature: a code and words."""

    def __init__(self, code: WitnessCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class WitnessSender:
    """The thread that has every run's latest signed head cosigned by each witness."""

    def __init__(
        self,
        store: RunStore,
        witnesses: Sequence[WitnessConfig],
        *,
        poll_seconds: float = 0.2,
        report: Callable[[str], None] | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.witnesses = list(witnesses)
        self.keys = witness_keys(self.witnesses)
        self.poll_seconds = poll_seconds
        self.report = report or _to_stderr
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # (run, witness) -> (monotonic time it is due, the wait after the next failure)
        self._owed: dict[tuple[str, str], tuple[float, float]] = {}
        self._failing: set[tuple[str, str]] = set()
        self._last_row = 0

    def start(self) -> None:
        """Start watching the store (every run with a signed head is looked at once)."""
        self._thread = threading.Thread(target=self._loop, name="hatp-witness-sender", daemon=True)
        self._thread.start()

    def stop(self, flush_seconds: float = 10.0) -> None:
        """One last pass for every head still owed (bounded), then stop; what is left stays owed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(flush_seconds)

    def pass_now(self) -> None:
        """Send every owed head once, in this thread (``hatp-recorder witnesses --send``)."""
        self._pass(every=True)

    def _loop(self) -> None:
        while True:
            stopping = self._stop.is_set()
            self._pass(every=stopping)
            if stopping:
                return
            self._stop.wait(self._next_wait())

    def _next_wait(self) -> float:
        now = time.monotonic()
        soonest = min((due for due, _ in self._owed.values()), default=now + self.poll_seconds)
        return max(0.0, min(self.poll_seconds, soonest - now))

    def _pass(self, *, every: bool) -> None:
        """Find newly signed heads, then send every owed one that is due (all of them if ``every``)."""
        self._last_row, runs = self.store.signed_since(self._last_row)
        for run in runs:
            for witness in self.witnesses:
                first = self._owed.get((run, witness.name), (0.0, witness.retry_seconds))
                self._owed[run, witness.name] = (0.0, first[1])  # a new head: due now
        now = time.monotonic()
        for witness in self.witnesses:
            for run, name in [key for key, (due, _) in self._owed.items() if key[1] == witness.name]:
                due, wait = self._owed[run, name]
                if due > now and not every:
                    continue
                try:
                    done = self.send(run, witness)
                except Refused as refused:
                    self._failed(run, witness, refused, wait)
                    continue
                del self._owed[run, name]
                if (run, name) in self._failing:
                    self._failing.discard((run, name))
                    self.report(f"hatp-recorder: witness {name} cosigned head e{done} of run {run}")

    def _failed(self, run: str, witness: WitnessConfig, refused: Refused, wait: float) -> None:
        longest = min(witness.max_retry_seconds, MAX_RETRY_SECONDS)
        self._owed[run, witness.name] = (time.monotonic() + wait, min(wait * 2, longest))
        latest = self.store.latest_checkpoint(run)
        at = wire_time(self.clock())
        size = latest.size if latest is not None else 0
        kept = note_due(
            self.store.engine, Due(run, witness.name, size, refused.code, refused.message, 0, at, at)
        )
        if (run, witness.name) not in self._failing or kept.attempts in (2, 10) or kept.attempts % 100 == 0:
            self.report(
                f"hatp-recorder: {refused.code}: witness {witness.name}: {refused.message}; head e{size} of "
                f"run {run} is kept and sent again in {wait:g} s (attempt {kept.attempts})"
            )
        self._failing.add((run, witness.name))

    def send(self, run: str, witness: WitnessConfig) -> int:
        """Have the run's latest signed head cosigned by ``witness``: the size cosigned, or Refused."""
        latest = self.store.latest_checkpoint(run)
        if latest is None:
            return 0
        if latest_cosigned(self.store.engine, run, witness.name) == (latest.size, latest.head):
            return latest.size
        for _ in range(_STALE_ATTEMPTS):
            since = self._held(run, witness)
            if since == latest.size:
                return latest.size
            target = self._next_head(run, since, latest)
            entries = self.store.entry_bytes(run, since, target.size)
            request = CosignRequest(
                checkpoint=target,
                recorder_key=self.store.public_key.wire(),
                since=since,
                entries=[b64url(data) for data in entries],
                run=self.store.run(run) if since == 0 else None,
            )
            answer = _asked(partial(send_cosign, witness.url, run, request, witness.timeout_seconds))
            if isinstance(answer, WitnessedHead):
                self._keep(run, witness, answer, target)
                if target.size == latest.size:
                    return latest.size
                continue
            if answer.code != WitnessCode.WITNESS_STALE_BASE:
                raise Refused(answer.code, answer.message)
        raise Refused(WitnessCode.WITNESS_STALE_BASE, "the witness's head kept moving")

    def _held(self, run: str, witness: WitnessConfig) -> int:
        """The size of the head the witness holds for ``run`` (0: none); its cosignature is kept."""
        held = _asked(partial(latest_head, witness.url, run, witness.timeout_seconds))
        if not isinstance(held, WitnessedHead):
            if held.code == WitnessCode.WITNESS_UNKNOWN_RUN:
                return 0
            raise Refused(held.code, held.message)
        size = held.cosignature.size
        if self._head_at(run, size) != held.cosignature.head:
            raise Refused(
                WitnessCode.WITNESS_AHEAD_OF_STORE,
                f"the witness cosigned a head at size {size} that this store does not have",
            )
        self._keep(run, witness, held, held.checkpoint)
        return size

    def _head_at(self, run: str, size: int) -> str | None:
        if size == 0:
            return genesis_hash(self.store.run(run))
        found = self.store.entry_bytes(run, size - 1, size)
        return "sha256:" + hashlib.sha256(found[0]).hexdigest() if found else None

    def _next_head(self, run: str, since: int, latest: Checkpoint) -> Checkpoint:
        """The latest head, or, if the entries since ``since`` are too many to send at once, the
        first signed head past it (the rest follow in later requests)."""
        if sum(len(data) for data in self.store.entry_bytes(run, since, latest.size)) <= _STEP_BYTES:
            return latest
        return next(c for c in self.store.checkpoints(run) if c.size > since)

    def _keep(self, run: str, witness: WitnessConfig, answer: WitnessedHead, asked: Checkpoint) -> None:
        cosignature = answer.cosignature
        expected = (witness.name, run, asked.size, asked.head, self.store.public_key.kid)
        said = (
            cosignature.witness,
            cosignature.run,
            cosignature.size,
            cosignature.head,
            cosignature.recorder_kid,
        )
        if said != expected or not cosignature_verifies(cosignature, self.keys[witness.name]):
            raise Refused(
                WitnessCode.WITNESS_BAD_ANSWER, "the cosignature is not of this head by the pinned key"
            )
        keep_cosignature(self.store.engine, cosignature)


def cosignature_verifies(cosignature: Cosignature, key: VerifyKey) -> bool:
    """Whether ``cosignature`` is signed by ``key`` over what it says."""
    return verify(cosignature.receipt, cosignature.signed(), {key.kid: key})


def _asked(call: Callable[[], _T]) -> _T:
    try:
        return call()
    except Unreachable as error:
        raise Refused(error.code, error.message) from None


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def witnesses_command(store: RunStore, witnesses: Sequence[WitnessConfig], *, send: bool) -> int:
    """``hatp-recorder witnesses``: what is owed a cosignature (exit 1 if anything); ``send``: try now."""
    if not witnesses:
        print("no witnesses configured ([[witnesses]] in the config)")
        return 0
    if send:
        sender = WitnessSender(store, witnesses, report=lambda line: None)
        sender.pass_now()
    owed = [due for due in dues(store.engine) if due.witness in {w.name for w in witnesses}]
    tried = {(due.run, due.witness) for due in owed}
    for run in store.runs():
        latest = store.latest_checkpoint(run.id)
        for witness in witnesses:
            cosigned = latest_cosigned(store.engine, run.id, witness.name)
            if latest is None or (run.id, witness.name) in tried or cosigned == (latest.size, latest.head):
                continue
            said = "not sent yet: sent by a running Recorder, or by `witnesses --send`"
            owed.append(
                Due(run.id, witness.name, latest.size, WitnessCode.WITNESS_PENDING, said, 0, "-", "-")
            )
    for due in owed:
        cells = (due.run, due.witness, f"e{due.size}", due.code, f"{due.attempts} attempts since {due.since}")
        print("\t".join((*cells, shown(due.detail))))
    if not owed:
        print("every run's latest signed head is cosigned by each witness")
    return 1 if owed else 0
