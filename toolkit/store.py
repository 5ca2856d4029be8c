"""The durable undo store: SQLite by default (WAL, synchronous=FULL), or PostgreSQL.

Tokens are stored hashed: a leaked database does not hand out working tokens.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, event, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Field, SQLModel, create_engine

from hatp_journal._shared.extras import install_hint, missing_extra
from hatp_journal.toolkit._after_commit import PendingAction
from hatp_journal.toolkit._tombstones import Tombstone
from hatp_journal.toolkit._undo_writes import UndoWrite
from hatp_journal.toolkit.errors import StoreCode, StoreError
from hatp_journal.toolkit.signing import token_digest
from hatp_journal.toolkit.store_schema import MIGRATIONS, ensure_schema


class UndoRecord(SQLModel, table=True):
    """One call's stored undo procedure, addressed by the hash of its token."""

    __tablename__ = "hatp_undo_record"

    token_hash: str = Field(primary_key=True)
    server: str
    tool: str
    resource: str
    version: str
    before: str | None = None
    etag: str | None = None
    before_etag: str | None = None
    fields_json: str | None = None
    payload_json: str
    via: str = "api"
    side_effects_json: str = "[]"
    called_at: str
    undo_by: str
    arguments_digest: str
    done_answer_json: str | None = None


class UndoAttempt(SQLModel, table=True):
    """The stored answer to one compensate request, so a retry gets the same answer back."""

    __tablename__ = "hatp_undo_attempt"

    token_hash: str = Field(primary_key=True)
    request_key: str = Field(primary_key=True)
    answer_json: str
    at: str


class UndoBinding(SQLModel, table=True):
    """The Recorder a token was issued through: only requests proven by its key may compensate."""

    __tablename__ = "hatp_undo_binding"

    token_hash: str = Field(primary_key=True)
    kid: str
    public_key: str


def hash_token(token: str) -> str:
    """The store's key for a token: its :func:`~hatp_journal.toolkit.signing.token_digest`."""
    return token_digest(token)


UNDO_SCHEMA = 3
"""The version of the undo store's tables (``hatp_schema`` part ``undo``); 2 added the recorded
after-commit actions (``hatp_after_commit``) and the deleted rows' tombstones (``hatp_tombstone``);
3 the other resources of a call that wrote several (``hatp_undo_write``)."""


def _add_version_2_tables(connection: Connection) -> None:
    for model in (PendingAction, Tombstone):
        model.__table__.create(connection, checkfirst=True)  # type: ignore[union-attr]


def _add_version_3_tables(connection: Connection) -> None:
    UndoWrite.__table__.create(connection, checkfirst=True)  # type: ignore[attr-defined]


MIGRATIONS[("undo", 1)] = _add_version_2_tables
MIGRATIONS[("undo", 2)] = _add_version_3_tables

_POOL_OPTIONS = ("pool_size", "max_overflow")
"""Engine options a store URL may carry in its query string (taken out before the driver sees it)."""

_CONNECT_TIMEOUT = 10  # seconds: an unreachable PostgreSQL fails the start instead of hanging it


def create_store_engine(url: str | Path) -> Engine:
    """An engine for ``url`` (a SQLAlchemy URL or a SQLite file path) with the tables created.

    SQLite gets WAL, ``synchronous=FULL`` (an undo record must survive power loss) and
    ``BEGIN IMMEDIATE`` transactions, so two compensations of one token serialize. PostgreSQL
    (``postgresql://user@host/db``) goes through psycopg 3; ``?pool_size=N&max_overflow=M`` size
    the connection pool. The schema is versioned (:mod:`~hatp_journal.toolkit.store_schema`).
    """
    engine = open_store_engine(url)
    tables = list(SQLModel.metadata.tables.values())  # the undo tables and the server's own
    try:
        ensure_schema(engine, "undo", UNDO_SCHEMA, tables)
    except StoreError:
        engine.dispose()
        raise
    return engine


def open_store_engine(url: str | Path) -> Engine:
    """An engine for ``url`` that has connected once, creating no table (see ``create_store_engine``)."""
    text = str(url)
    if "://" not in text:
        if Path(text).is_dir():
            raise StoreError(f"the store {text} is a folder, not a database file")
        try:
            Path(text).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot make the folder for the store {text}: {error.strerror}") from None
        text = f"sqlite:///{text}"
    engine = _engine_for(text)
    if engine.dialect.name == "sqlite":
        configure_sqlite(engine)
    try:
        with engine.connect() as connection:  # SQLite reads its file's header only when asked
            probe = "SELECT count(*) FROM sqlite_master" if engine.dialect.name == "sqlite" else "SELECT 1"
            connection.exec_driver_sql(probe)
    except DBAPIError as error:
        engine.dispose()
        code = StoreCode.STORE_UNUSABLE if engine.dialect.name == "sqlite" else StoreCode.STORE_UNREACHABLE
        raise StoreError(f"cannot open the store {shown_url(str(url))}: {_reason(error)}", code) from None
    return engine


def _engine_for(text: str) -> Engine:
    """The engine for a URL: PostgreSQL through psycopg 3, its pool sized from the URL's query."""
    try:
        url = make_url(text)
        options: dict[str, Any] = {}
        for name in _POOL_OPTIONS:
            if name in url.query:
                options[name] = int(str(url.query[name]))
        url = url.difference_update_query(_POOL_OPTIONS)
        if url.get_backend_name() == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
            options["pool_pre_ping"] = True  # a database restart must not fail the next call
            if "connect_timeout" not in url.query:
                options["connect_args"] = {"connect_timeout": _CONNECT_TIMEOUT}
        return create_engine(url, **options)
    except (ArgumentError, NoSuchModuleError, ValueError, ImportError) as error:
        extra = missing_extra(error) if isinstance(error, ImportError) else None
        reason = f"it needs the {extra!r} extra: {install_hint(extra)}" if extra else str(error)
        raise StoreError(
            f"not a usable store URL {shown_url(text)}: {reason}", StoreCode.STORE_BAD_URL
        ) from None


def shown_url(text: str | Path) -> str:
    """A store URL (or SQLite path) as it may be printed anywhere: its password masked.

    The one place a store's address is made printable; every message naming a store goes through it.
    """
    text = str(text)
    try:
        return make_url(text).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"(//[^/:@]*):[^/@]*@", r"\1:***@", text)  # malformed: still no password shown


def _reason(error: DBAPIError) -> str:
    return str(error.orig).splitlines()[0] if error.orig is not None else type(error).__name__


def configure_sqlite(engine: Engine, *, synchronous: str = "FULL") -> None:
    """WAL, ``synchronous`` (FULL: a commit survives power loss; NORMAL: only a killed process)
    and ``BEGIN IMMEDIATE`` transactions on every connection of a SQLite ``engine``."""

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
