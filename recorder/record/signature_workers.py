"""The Ed25519 checks of a verification, on every core (``docs/run-record.md``, verifying).

A signature check is the costly part of verifying a record: the verifier prepares each one (the
key, the signature, the canonical bytes signed: :func:`signing.signature_task`) and hands it here
with what to do with its verdict. A small record is checked in this process, each verdict at once,
exactly as before. Once a record has shown :data:`POOL_AFTER` signatures, checks go in batches to
worker processes, one per core; verdicts come back in order, and each is acted on in the order the
checks were handed in, so the report is the same, problem for problem. Only a bounded number of
batches is out at a time: memory stays flat however long the record.

A worker is a plain Python process that imports nothing but ``cryptography``, fed over its stdin
and answering on its stdout: it starts in tens of milliseconds, and the verifier's imports are not
repeated. If a worker cannot be started or stops answering, its batch is checked here instead and
the rest of the record too: the verdicts are the same, only slower.
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from hatp_journal.toolkit.signing import SignatureTask, check_task

POOL_AFTER = 2000
"""Signatures checked in this process before workers start: a record smaller than this never pays
for starting them (about a tenth of a second of checks on one core, about what starting costs)."""
BATCH = 256
"""Checks sent to a worker at a time: enough to make the pipe's cost small beside the checks."""
IN_FLIGHT_PER_WORKER = 3
"""Batches out per worker before the verifier waits for the oldest: keeps every worker busy
while memory (the batches and the entries they belong to) stays bounded."""

Then = Callable[[bool], None]

_HEAD = struct.Struct(">I")
_TASK = struct.Struct(">32sII")

WORKER_SOURCE = """
import struct, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
head, task = struct.Struct(">I"), struct.Struct(">32sII")
read, out, keys = sys.stdin.buffer.read, sys.stdout.buffer, {}
while len(size := read(4)) == 4:
    data, at, verdicts = read(head.unpack(size)[0]), 0, bytearray()
    while at < len(data):
        raw, signature_size, message_size = task.unpack_from(data, at)
        at += task.size
        signature = data[at : at + signature_size]
        at += signature_size
        message = data[at : at + message_size]
        at += message_size
        if len(keys) > 1024:
            keys.clear()
        key = keys.get(raw) or keys.setdefault(raw, Ed25519PublicKey.from_public_bytes(raw))
        try:
            key.verify(signature, message)
            verdicts.append(1)
        except (InvalidSignature, ValueError):
            verdicts.append(0)
    out.write(head.pack(len(verdicts)) + verdicts)
    out.flush()
"""
"""The worker's program: batches of (public key, signature, message) in, one byte per verdict out."""


class WorkerGone(Exception):
    """A worker stopped answering (it crashed, was killed, or could not start)."""


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls) -> _Worker:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", WORKER_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        return cls(process)

    def send(self, tasks: list[SignatureTask]) -> None:
        parts = []
        for task in tasks:
            parts += [_TASK.pack(task.key.raw(), len(task.signature), len(task.message)), task.signature]
            parts.append(task.message)
        frame = b"".join(parts)
        try:
            self._stdin().write(_HEAD.pack(len(frame)) + frame)
            self._stdin().flush()
        except (BrokenPipeError, OSError, ValueError) as error:
            raise WorkerGone(str(error)) from None

    def receive(self, count: int) -> list[bool]:
        out = self.process.stdout
        assert out is not None
        try:
            head = out.read(_HEAD.size)
            verdicts = out.read(_HEAD.unpack(head)[0]) if len(head) == _HEAD.size else b""
        except (OSError, ValueError, struct.error) as error:
            raise WorkerGone(str(error)) from None
        if len(verdicts) != count:
            raise WorkerGone(f"{len(verdicts)} verdicts for {count} checks")
        return [verdict == 1 for verdict in verdicts]

    def _stdin(self) -> IO[bytes]:
        stdin = self.process.stdin
        assert stdin is not None
        return stdin

    def stop(self) -> None:
        """End the worker: its stdin closes, it finishes; killed if it does not at once."""
        with contextlib.suppress(OSError):
            self._stdin().close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@dataclass
class _Batch:
    """Checks handed in, in order: each a prepared check (or None: failed before any signature)
    with what to do with its verdict."""

    tasks: list[SignatureTask | None] = field(default_factory=list)
    thens: list[Then] = field(default_factory=list)
    worker: _Worker | None = None

    def sent(self) -> list[SignatureTask]:
        return [task for task in self.tasks if task is not None]

    def settle(self, checked: list[bool]) -> None:
        """Act on each verdict in order; ``checked`` holds those of the prepared checks."""
        verdicts = iter(checked)
        for task, then in zip(self.tasks, self.thens, strict=True):
            then(task is not None and next(verdicts))


class SignatureChecks:
    """Checks signatures for one verification, here or on worker processes (see the module).

    ``workers``: how many worker processes (None: one per core this process may use, none with
    only one; 0: none). ``pool_after``: signatures checked here before they start. ``hold``
    wraps what to do with a verdict that will come later, so that what it finds is put where it
    would have been found at once (``Findings.hold``).
    """

    def __init__(
        self,
        workers: int | None = None,
        pool_after: int = POOL_AFTER,
        hold: Callable[[Then], Then] = lambda then: then,
    ) -> None:
        if workers is None:
            cores = _cores()
            workers = cores if cores > 1 else 0  # one core: a worker would only take turns with this process
        self.workers = workers
        self.pool_after = pool_after
        self.hold = hold
        self.handed = 0
        self.started = False
        self.deferring = False
        """Whether verdicts now come later (from the moment workers started until :meth:`finish`)."""
        self._pool: list[_Worker] = []
        self._next = 0
        self._batch = _Batch()
        self._out: deque[_Batch] = deque()

    @property
    def worker_count(self) -> int:
        """Workers running now."""
        return len(self._pool)

    def check(self, task: SignatureTask | None, then: Then) -> None:
        """Check ``task`` and call ``then`` with its verdict: now, or later in the order handed in."""
        self.handed += 1
        if not self.started and self.workers > 0 and self.handed > self.pool_after:
            self._start()
        if not self.deferring:
            then(check_task(task))
            return
        self._batch.tasks.append(task)
        self._batch.thens.append(self.hold(then))
        if len(self._batch.tasks) >= BATCH:
            self._send()

    def finish(self) -> None:
        """Act on every verdict still to come; afterwards checks are made here, at once."""
        if self._batch.tasks:
            self._send()
        while self._out:
            self._settle_oldest()
        self.close()

    def close(self) -> None:
        """Stop the workers; verdicts not yet acted on are dropped (:meth:`finish` acts on them)."""
        pool, self._pool = self._pool, []
        for worker in pool:
            worker.stop()
        self._out.clear()
        self._batch = _Batch()
        self.deferring = False

    def _start(self) -> None:
        self.started = True
        try:
            for _ in range(self.workers):
                self._pool.append(_Worker.start())
        except OSError:
            self.close()  # no workers here (no executable, no processes left): check in this process
            return
        self.deferring = True

    def _send(self) -> None:
        batch, self._batch = self._batch, _Batch()
        if self._pool:
            batch.worker = self._pool[self._next % len(self._pool)]
            self._next += 1
            try:
                batch.worker.send(batch.sent())
            except WorkerGone:
                batch.worker = None
        self._out.append(batch)
        while len(self._out) > IN_FLIGHT_PER_WORKER * max(1, len(self._pool)):
            self._settle_oldest()

    def _settle_oldest(self) -> None:
        batch = self._out.popleft()
        sent = batch.sent()
        checked: list[bool] | None = None
        if batch.worker is not None:
            try:
                checked = batch.worker.receive(len(sent))
            except WorkerGone:
                checked = None
        if checked is None:
            # No worker answered: this batch is checked here, and every batch after it.
            checked = [check_task(task) for task in sent]
            self._abandon_pool()
        batch.settle(checked)

    def _abandon_pool(self) -> None:
        pool, self._pool = self._pool, []
        for worker in pool:
            worker.process.kill()
            worker.stop()
        for waiting in self._out:
            waiting.worker = None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
