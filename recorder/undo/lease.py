"""One undo at a time per run: a lease row held while a plan executes.

A second concurrent undo of the same run is refused (``UNDO_BUSY``). A lease whose holder died
(``kill -9``) is taken over by the next executor on the same host, which then resumes from the
Run Record; the record, not the lease, says what was already compensated.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel

from hatp_journal.recorder.runs.processes import process_alive
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.toolkit.store_schema import ensure_schema


class RecUndoLease(SQLModel, table=True):
    """Who is executing an undo of ``run`` right now (operational state, not part of the record)."""

    __tablename__ = "rec_undo_lease"

    run: str = Field(primary_key=True)
    plan: str
    host: str
    pid: int


LEASE_SCHEMA = 1
"""The version of the lease table (``hatp_schema`` part ``lease``)."""
LEASE_TABLES = [SQLModel.metadata.tables["rec_undo_lease"]]


@contextmanager
def undo_lease(engine: Engine, run: str, plan: str) -> Iterator[None]:
    """Hold the run's undo lease for the duration of the block."""
    ensure_schema(engine, "lease", LEASE_SCHEMA, LEASE_TABLES)
    host, pid = socket.gethostname(), os.getpid()
    with Session(engine) as session:
        held = session.get(RecUndoLease, run)
        if held is not None:
            if held.host != host or process_alive(held.pid):
                raise UndoError(
                    UndoCode.UNDO_BUSY,
                    f"an undo of {run} ({held.plan}) is running in process {held.pid} on {held.host}",
                )
            session.delete(held)  # its holder died: take over, the record says where it stopped
        session.add(RecUndoLease(run=run, plan=plan, host=host, pid=pid))
        try:
            session.commit()
        except IntegrityError:
            raise UndoError(UndoCode.UNDO_BUSY, f"another undo of {run} started just now") from None
    try:
        yield
    finally:
        with Session(engine) as session:
            mine = session.get(RecUndoLease, run)
            if mine is not None and (mine.host, mine.pid) == (host, pid):
                session.delete(mine)
                session.commit()
