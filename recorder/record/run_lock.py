"""Make a transaction its run's only writer: what ``BEGIN IMMEDIATE`` is on SQLite, elsewhere.

Every write that reads a run's head and writes after it (an append, a checkpoint, an export that
signs a fresh head) takes this lock first, so concurrent writers of one run take turns instead of
racing on ``UNIQUE(run, seq)``, and checkpoints are signed in the order of the heads they sign.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from hatp_journal.recorder.record.tables import RecRun

_RUN_TABLE = RecRun.__table__  # type: ignore[attr-defined]
_LOCK_RUN = select(_RUN_TABLE.c.id).where(_RUN_TABLE.c.id == bindparam("run")).with_for_update()


def lock_run_head(connection: Connection, run_id: str) -> None:
    """Hold the run's row lock until the transaction ends (PostgreSQL and the like).

    On SQLite the toolkit engine's transactions begin ``IMMEDIATE`` and already hold the
    database's write lock, and SQLite has no ``FOR UPDATE``: nothing to do there.
    """
    if connection.dialect.name != "sqlite":
        connection.execute(_LOCK_RUN, {"run": run_id})
