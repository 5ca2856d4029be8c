"""Walking every run of a store, one run at a time: a run that can't be read is skipped and logged
(``RUN_UNREADABLE``, with the run id) and the walk goes on, so one damaged or hostile run never
stops a command, a page or the scheduler for the others."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TypeVar

from hatp_journal.recorder.record import Run, RunStore

RUN_UNREADABLE = "RUN_UNREADABLE"
"""Logged (as ``code``) for a run whose record could not be read; the other runs go on."""

T = TypeVar("T")


def each_run(
    store: RunStore, read: Callable[[Run], T], *, logger: logging.Logger, doing: str
) -> Iterator[tuple[Run, T]]:
    """``(run, read(run))`` for every run ``read`` gets through; the others are logged and skipped."""
    for run in store.runs():
        try:
            found = read(run)
        except Exception as error:  # noqa: BLE001 -- one run's record never stops the walk
            logger.warning(
                "%s: run %s skipped while %s: %s: %s",
                RUN_UNREADABLE,
                run.id,
                doing,
                type(error).__name__,
                error,
                extra={"code": RUN_UNREADABLE, "run": run.id},
            )
            continue
        yield run, found
