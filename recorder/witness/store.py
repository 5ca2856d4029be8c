"""A witness's append-only store: every head it cosigned, per run (SQLite or PostgreSQL).

Rows are only ever inserted. The latest row of a run is the head the next one must extend; the
first row's Recorder key is the only key whose heads of that run the witness cosigns.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import LargeBinary, insert, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Column, Field, SQLModel

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.layout import parse_json
from hatp_journal.recorder.witness.wire import WitnessedHead
from hatp_journal.toolkit.store import create_store_engine
from hatp_journal.toolkit.store_schema import ensure_schema


class WitHead(SQLModel, table=True):
    """One cosigned head. ``(run, size)`` is unique: two heads of one size are a fork, never kept."""

    __tablename__ = "wit_head"

    run: str = Field(primary_key=True)
    size: int = Field(primary_key=True)
    head: str
    recorder_kid: str
    at: str
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # the WitnessedHead, canonical


WITNESS_SCHEMA = 1
"""The version of the witness's tables (``hatp_schema`` part ``witness``)."""
WITNESS_TABLES = [SQLModel.metadata.tables["wit_head"]]
_HEADS = WITNESS_TABLES[0]


class WitnessStore:
    """The heads a witness cosigned. ``store`` is a SQLite path or a SQLAlchemy URL."""

    def __init__(self, store: str | Path) -> None:
        self.engine = create_store_engine(store)
        ensure_schema(self.engine, "witness", WITNESS_SCHEMA, WITNESS_TABLES)

    def latest(self, run: str) -> WitnessedHead | None:
        """The latest head of ``run`` cosigned here."""
        with self.engine.connect() as connection:
            row = connection.execute(
                select(_HEADS.c.data).where(_HEADS.c.run == run).order_by(_HEADS.c.size.desc()).limit(1)
            ).first()
        return WitnessedHead.model_validate(parse_json(row[0])) if row is not None else None

    def keep(self, witnessed: WitnessedHead) -> bool:
        """Insert a cosigned head; False if a head of that size was kept first (the caller lost a race)."""
        cosignature = witnessed.cosignature
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    insert(_HEADS).values(
                        run=cosignature.run,
                        size=cosignature.size,
                        head=cosignature.head,
                        recorder_kid=cosignature.recorder_kid,
                        at=cosignature.receipt.issued_at,
                        data=canonical_bytes(witnessed.wire()),
                    )
                )
        except IntegrityError:
            return False
        return True

    def dispose(self) -> None:
        """Release the database connections."""
        self.engine.dispose()
