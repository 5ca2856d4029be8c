"""One holder at a time across every Recorder process on a store: for work that must happen once.

Reminders, escalations and lapses are due for the whole organisation, and every Recorder on a shared
store (the web approver's scheduler, a cron ``tick`` on each host) would find them due at once and mail
them twice. So ``tick`` runs under a named lease in the store: whoever holds it ticks, everyone else
skips this round (the holder does what they would have done).

A lease expires: a holder that died (``kill -9``, a lost host) blocks the others only until then.
On the same host a dead holder is noticed at once, as the undo lease does. The expiry is wall-clock
time on the store's hosts, never the tick's own ``--now`` (which may be a moment in a story).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from hatp_journal._shared.clock import parse_wire_time, utc_now, wire_time
from hatp_journal.recorder.runs.processes import process_alive
from hatp_journal.toolkit.store_schema import ensure_schema


class RecFleetLease(SQLModel, table=True):
    """Who does ``name`` right now, until when (operational state, not part of any record)."""

    __tablename__ = "rec_fleet_lease"

    name: str = Field(primary_key=True)
    holder: str
    host: str
    pid: int
    expires: str


FLEET_LEASE_SCHEMA = 1
"""The version of the lease table (``hatp_schema`` part ``fleet-lease``)."""
_TABLE = SQLModel.metadata.tables["rec_fleet_lease"]
FLEET_LEASE_TABLES = [_TABLE]

TICK_LEASE = "tick"
TICK_LEASE_TTL = timedelta(minutes=5)
"""Longer than a tick takes; how late reminders are, at most, after their ticker died elsewhere."""


@contextmanager
def fleet_lease(engine: Engine, name: str, ttl: timedelta, *, now: datetime | None = None) -> Iterator[bool]:
    """Hold lease ``name`` for the block if nobody live holds it; yields whether it is held."""
    ensure_schema(engine, "fleet-lease", FLEET_LEASE_SCHEMA, [_TABLE])
    holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
    at = now or utc_now()
    held = _take(engine, name, holder, at + ttl, at)
    try:
        yield held
    finally:
        if held:
            with engine.begin() as connection:
                connection.execute(delete(_TABLE).where(_TABLE.c.name == name, _TABLE.c.holder == holder))


def _take(engine: Engine, name: str, holder: str, expires: datetime, now: datetime) -> bool:
    row = {"name": name, "holder": holder, "host": socket.gethostname(), "pid": os.getpid()}
    try:
        with engine.begin() as connection:
            mine = select(_TABLE).where(_TABLE.c.name == name).with_for_update()
            current = connection.execute(mine).first()
            if current is not None and not _lapsed(current.host, current.pid, current.expires, now):
                return False
            if current is not None:
                connection.execute(delete(_TABLE).where(_TABLE.c.name == name))
            connection.execute(_TABLE.insert(), {**row, "expires": wire_time(expires)})
    except IntegrityError:
        return False  # another process took it between our read and our insert
    return True


def _lapsed(host: str, pid: int, expires: str, now: datetime) -> bool:
    """The holder's lease ran out, or its process is gone (known only on its own host)."""
    if parse_wire_time(expires) <= now:
        return True
    return host == socket.gethostname() and not process_alive(pid)
