"""Witnesses' cosignatures of a run's signed heads, kept beside the record (docs/witness.md).

A cosignature is not an entry: appending one would move the head it cosigns. It is kept in
``rec_witnessed`` and shipped in an export's ``witnessed`` member, which the verifier checks against
the witness keys it pins (``verify --witness``). ``rec_witness_due`` says, per run and witness, what
the last attempt to have the run's latest head cosigned came to: operational state, read by
``hatp-recorder witnesses``, never part of a record.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, LargeBinary, delete, insert, select
from sqlmodel import Column, Field, SQLModel

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.layout import parse_json
from hatp_journal.recorder.record.models import Cosignature
from hatp_journal.toolkit.store_schema import ensure_schema


class RecWitnessed(SQLModel, table=True):
    """One cosignature of a head of a run, by one witness; rows are never changed."""

    __tablename__ = "rec_witnessed"

    run: str = Field(primary_key=True)
    witness: str = Field(primary_key=True)
    size: int = Field(primary_key=True)
    head: str
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # the cosignature, canonical JSON


class RecWitnessDue(SQLModel, table=True):
    """The last attempt to have a run's latest head cosigned by a witness, while it is owed."""

    __tablename__ = "rec_witness_due"

    run: str = Field(primary_key=True)
    witness: str = Field(primary_key=True)
    size: int
    code: str
    detail: str
    attempts: int
    since: str  # wire time of the first failed attempt for this head
    at: str  # wire time of the latest attempt


WITNESSED_SCHEMA = 1
"""The version of these tables (``hatp_schema`` part ``witnessed``)."""
WITNESSED_TABLES = [SQLModel.metadata.tables[name] for name in ("rec_witnessed", "rec_witness_due")]
_KEPT = WITNESSED_TABLES[0]
_DUE = WITNESSED_TABLES[1]


@dataclass(frozen=True)
class Due:
    """A head owed a cosignature, and why it is not cosigned yet."""

    run: str
    witness: str
    size: int
    code: str
    detail: str
    attempts: int
    since: str
    at: str


def ensure_witnessed(engine: Engine) -> None:
    """Create the tables if they are missing (once per engine in a process)."""
    ensure_schema(engine, "witnessed", WITNESSED_SCHEMA, WITNESSED_TABLES)


def keep_cosignature(engine: Engine, cosignature: Cosignature) -> None:
    """Keep ``cosignature`` (again: a no-op) and clear what was owed to its witness up to its size."""
    key = (cosignature.run, cosignature.witness, cosignature.size)
    with engine.begin() as connection:
        found = connection.execute(
            select(_KEPT.c.run).where(
                _KEPT.c.run == key[0], _KEPT.c.witness == key[1], _KEPT.c.size == key[2]
            )
        ).first()
        if found is None:
            connection.execute(
                insert(_KEPT).values(
                    run=key[0],
                    witness=key[1],
                    size=key[2],
                    head=cosignature.head,
                    data=canonical_bytes(cosignature.wire()),
                )
            )
        connection.execute(
            delete(_DUE).where(_DUE.c.run == key[0], _DUE.c.witness == key[1], _DUE.c.size <= key[2])
        )


def kept_cosignatures(connection: Connection, run: str, upto: int | None = None) -> list[Cosignature]:
    """The run's kept cosignatures (of heads at most ``upto`` entries), by size then witness."""
    query = select(_KEPT.c.data).where(_KEPT.c.run == run)
    if upto is not None:
        query = query.where(_KEPT.c.size <= upto)
    rows = connection.execute(query.order_by(_KEPT.c.size, _KEPT.c.witness))
    return [Cosignature.model_validate(parse_json(row[0])) for row in rows]


def latest_cosigned(engine: Engine, run: str, witness: str) -> tuple[int, str] | None:
    """The (size, head) of the latest head of ``run`` that ``witness`` cosigned, as kept here."""
    with engine.connect() as connection:
        row = connection.execute(
            select(_KEPT.c.size, _KEPT.c.head)
            .where(_KEPT.c.run == run, _KEPT.c.witness == witness)
            .order_by(_KEPT.c.size.desc())
            .limit(1)
        ).first()
    return (row[0], row[1]) if row is not None else None


def note_due(engine: Engine, due: Due) -> Due:
    """Record a failed attempt; the first failure for a head sets ``since``. Returns what is kept."""
    with engine.begin() as connection:
        row = connection.execute(
            select(_DUE.c.size, _DUE.c.attempts, _DUE.c.since).where(
                _DUE.c.run == due.run, _DUE.c.witness == due.witness
            )
        ).first()
        attempts, since = (row[1] + 1, row[2]) if row is not None and row[0] == due.size else (1, due.at)
        connection.execute(delete(_DUE).where(_DUE.c.run == due.run, _DUE.c.witness == due.witness))
        kept = Due(due.run, due.witness, due.size, due.code, due.detail, attempts, since, due.at)
        connection.execute(insert(_DUE).values(**kept.__dict__))
    return kept


def dues(engine: Engine) -> list[Due]:
    """Every head still owed a cosignature, by run then witness."""
    with engine.connect() as connection:
        rows = connection.execute(select(_DUE).order_by(_DUE.c.run, _DUE.c.witness))
        return [Due(**row._mapping) for row in rows]
