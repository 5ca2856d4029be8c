"""Durable appends from async code: one writer thread, several entries per commit.

The gateway must not wait for an fsync on the event loop (every other agent's call would wait
with it), and it must not answer a call before the call's entry is durable. So each append is
handed to a writer thread and the caller awaits it. Appends that arrive while a commit is under
way wait together and go into the next transaction: one fsync for all of them (group commit).
A batch that fails is retried entry by entry, so one bad entry fails alone.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from hatp_journal.recorder.record.answers import KeptAnswer
from hatp_journal.recorder.record.kinds import EntryKind
from hatp_journal.recorder.record.models import Entry

Tokens = tuple[tuple[str, str, str], ...]
Append = tuple[str, EntryKind, dict[str, Any], Tokens, KeptAnswer | None]
"""One append: run, kind, body, tokens, and the answer to keep for a retry (``answers.py``)."""

MAX_BATCH = 256
"""Most entries per transaction: bounds how long one commit holds the database."""


@dataclass(frozen=True)
class _Job:
    append: Append
    done: Future[Entry] = field(default_factory=Future)


class GroupCommit:
    """Appends through ``append_many`` (one transaction) on a thread of its own."""

    def __init__(
        self,
        append_many: Callable[[Sequence[Append]], list[Entry]],
        append_one: Callable[[Append], Entry],
    ) -> None:
        self._append_many = append_many
        self._append_one = append_one
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    async def append(self, append: Append) -> Entry:
        """The entry, once it is committed (durably, as the store commits)."""
        job = _Job(append)
        self._running()
        self._jobs.put(job)
        return await asyncio.wrap_future(job.done)

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._start:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()

    def _running(self) -> None:
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._work, name="hatp-group-commit", daemon=True)
                    self._thread.start()

    def _work(self) -> None:
        stop = False
        while not stop:
            job = self._jobs.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < MAX_BATCH:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[_Job]) -> None:
        try:
            entries = self._append_many([job.append for job in batch])
        except Exception:  # noqa: BLE001 - each append is retried alone and fails alone
            for job in batch:
                try:
                    job.done.set_result(self._append_one(job.append))
                except Exception as error:  # noqa: BLE001 - handed to the caller awaiting it
                    job.done.set_exception(error)
            return
        for job, entry in zip(batch, entries, strict=True):
            job.done.set_result(entry)
