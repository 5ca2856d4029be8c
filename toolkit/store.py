"""The durable undo store: SQLite by default (WAL, synchronous=FULL), any SQLAlchemy URL.

Tokens are stored hashed: a leaked database does not hand out working tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Field, SQLModel, create_engine

from hatp_journal.toolkit.errors import StoreError
from hatp_journal.toolkit.signing import token_digest


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


def create_store_engine(url: str | Path) -> Engine:
    """An engine for ``url`` (a SQLAlchemy URL or a SQLite file path) with the tables created.

    SQLite gets WAL, ``synchronous=FULL`` (an undo record must survive power loss) and
    ``BEGIN IMMEDIATE`` transactions, so two compensations of one token serialize.
    """
    text = str(url)
    if "://" not in text:
        if Path(text).is_dir():
            raise StoreError(f"the store {text} is a folder, not a database file")
        try:
            Path(text).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot make the folder for the store {text}: {error.strerror}") from None
        text = f"sqlite:///{text}"
    engine = create_engine(text)
    if engine.dialect.name == "sqlite":
        _make_sqlite_durable(engine)
    try:
        SQLModel.metadata.create_all(engine)
    except DBAPIError as error:
        engine.dispose()
        reason = str(error.orig).splitlines()[0] if error.orig is not None else type(error).__name__
        raise StoreError(f"cannot open the store {url}: {reason}") from None
    return engine


def _make_sqlite_durable(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
