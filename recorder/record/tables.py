"""SQLModel tables of the Run Record store (prefixed ``rec_``: the metadata is shared process-wide)."""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class RecRun(SQLModel, table=True):
    """One run. ``closed_at`` is set once, by the first close."""

    __tablename__ = "rec_run"

    id: str = Field(primary_key=True)
    agent: str
    principal: str
    opened_at: str
    closed_at: str | None = None


class RecEntry(SQLModel, table=True):
    """One entry, stored as the exact canonical bytes that were hashed.

    The primary key (run, seq) is the ``UNIQUE(run, seq)`` that makes a forked chain impossible:
    a second writer of the same seq fails instead of branching. Rows are never updated.
    """

    __tablename__ = "rec_entry"

    run: str = Field(primary_key=True, foreign_key="rec_run.id")
    seq: int = Field(primary_key=True)
    kind: str
    hash: str
    data: bytes


class RecCheckpoint(SQLModel, table=True):
    """A signed chain head; every one is kept, in the order it was signed."""

    __tablename__ = "rec_checkpoint"

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(index=True, foreign_key="rec_run.id")
    size: int
    head: str
    at: str
    reason: str
    kid: str
    sig: str


class RecToken(SQLModel, table=True):
    """A compensation token, by its digest: kept beside the record, never in it."""

    __tablename__ = "rec_token"

    digest: str = Field(primary_key=True)
    server: str
    token: str


class RecDirectory(SQLModel, table=True):
    """The directory (people, roles, keys) as it stood at a decision, by its digest."""

    __tablename__ = "rec_directory"

    digest: str = Field(primary_key=True)
    data: bytes


RECORD_SCHEMA = 1
"""The version of these tables (``hatp_schema`` part ``record``; see toolkit/store_schema.py)."""

TABLES = [
    SQLModel.metadata.tables[name]
    for name in ("rec_run", "rec_entry", "rec_checkpoint", "rec_token", "rec_directory")
]
"""The tables this store creates on an engine it did not create itself."""
