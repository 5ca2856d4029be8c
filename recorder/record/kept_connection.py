"""The SQLite driver connection a Run Record store appends through, checked out of the pool once.

An append runs once per recorded call, and checking a connection out of SQLAlchemy's pool and
back in cost about as much CPU as the append's own statements. So the store keeps one pooled
connection for its appends, one append at a time (a lock): appends of one process waited for
each other anyway, SQLite having one writer at a time. Being the pool's, the connection has the
engine's settings (WAL, ``synchronous=FULL``, the busy timeout). One left unusable (a transaction
it could not end, a closed connection) is dropped, as the pool would drop it on its return.

Only a ``QueuePool`` connection is kept: that is the pool of a SQLite file, whose connections
SQLAlchemy opens for use from any thread. Any other pool (``:memory:``, ``NullPool``, …) lends a
connection per append, as before.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.pool import PoolProxiedConnection, QueuePool


class KeptConnection:
    """The driver connection of ``engine`` that appends use, one at a time."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._keep = type(engine.pool) is QueuePool
        self._lock = threading.Lock()
        self._pooled: PoolProxiedConnection | None = None

    @contextmanager
    def driver(self) -> Iterator[sqlite3.Connection]:
        """The driver connection, held by the caller alone until the block ends."""
        if not self._keep:
            pooled = self._engine.raw_connection()
            try:
                yield _driver(pooled)
            finally:
                pooled.close()
            return
        with self._lock:
            if self._pooled is None:
                self._pooled = self._engine.raw_connection()
            driver = _driver(self._pooled)
            try:
                yield driver
            finally:
                if _unusable(driver):
                    # Left in a transaction or broken: the next append starts on a fresh connection.
                    pooled, self._pooled = self._pooled, None
                    pooled.invalidate()

    def close(self) -> None:
        """Give the connection back to the pool (the next append checks one out again)."""
        with self._lock:
            pooled, self._pooled = self._pooled, None
        if pooled is not None:
            pooled.close()


def _unusable(driver: sqlite3.Connection) -> bool:
    """True when the connection is still in a transaction (its rollback failed) or is closed."""
    try:
        return driver.in_transaction
    except sqlite3.Error:
        return True


def _driver(pooled: PoolProxiedConnection) -> sqlite3.Connection:
    driver = pooled.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return driver
