"""The answers agents got to their writes, kept beside the record so a retried call gets the same one.

An agent that did not get its answer (its connection or its Recorder died) calls again. Sending the
write again would make it twice, so the Recorder keeps what it answered (tokens stripped, as sent)
in ``rec_answer``, written in the same transaction as the call's entry: an entry that is durable has
its answer, and a retry finds it from any Recorder on the store (``recorder/gateway/retries.py``).

Rows are operational state, not part of any record: a pruned answer only means a later identical
call is a new call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, LargeBinary, delete, or_, select
from sqlmodel import Column, Field, SQLModel

from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit.store_schema import ensure_schema


class RecAnswer(SQLModel, table=True):
    """One forwarded call's answer, found by the call's digest or by the idempotency key it sent."""

    __tablename__ = "rec_answer"

    run: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)
    tool: str = Field(index=True)  # server/tool
    call: str  # sha256 of server, tool and arguments (asks.call_digest)
    key: str | None = Field(default=None, index=True)  # sha256 of the idempotency key
    at: str  # wire time, as the Recorder's clock said when it journaled the call
    data: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))  # None: too large


ANSWERS_SCHEMA = 1
"""The version of the answers table (``hatp_schema`` part ``answers``)."""
ANSWERS_TABLES = [SQLModel.metadata.tables["rec_answer"]]
_TABLE = ANSWERS_TABLES[0]


@dataclass(frozen=True)
class KeptAnswer:
    """What an append keeps of a call's answer: ``data`` is its JSON, None if too large."""

    tool: str
    call: str
    key: str | None
    at: str
    data: bytes | None


@dataclass(frozen=True)
class FoundAnswer:
    """An earlier call's answer: the entry it was journaled in, and what was kept of the answer."""

    seq: int
    call: str
    data: bytes | None

    @property
    def entry(self) -> str:
        return f"e{self.seq}"


def ensure_answers(engine: Engine) -> None:
    """Create the answers table if it is missing."""
    ensure_schema(engine, "answers", ANSWERS_SCHEMA, ANSWERS_TABLES)


def answer_row(run: str, seq: int, kept: KeptAnswer) -> dict[str, object]:
    """The row an append inserts for entry ``seq`` of ``run``."""
    row = {"run": run, "seq": seq, "tool": kept.tool, "call": kept.call, "key": kept.key, "at": kept.at}
    return {**row, "data": kept.data}


_FIND = (
    "SELECT seq, call, data FROM rec_answer WHERE run = ? AND at >= ? AND {} = ? ORDER BY seq DESC LIMIT 1"
)
FIND_BY_KEY_SQL = _FIND.format("key")
FIND_BY_TOOL_SQL = _FIND.format("tool")
"""The lookups, for the SQLite driver (a plain read: no ``BEGIN IMMEDIATE``, no write lock)."""


def find_answer(
    engine: Engine, run: str, *, tool: str, call: str, key: str | None, since: datetime
) -> FoundAnswer | None:
    """The answer in ``run`` of the call that sent idempotency key ``key`` since ``since``; without a
    key, the latest answer of ``tool`` since ``since``, if it answered this very call (``call``)."""
    query = select(_TABLE.c.seq, _TABLE.c.call, _TABLE.c.data).where(
        _TABLE.c.run == run, _TABLE.c.at >= wire_time(since)
    )
    query = query.where(_TABLE.c.key == key) if key is not None else query.where(_TABLE.c.tool == tool)
    with engine.connect() as connection:
        row = connection.execute(query.order_by(_TABLE.c.seq.desc()).limit(1)).first()
    return found_in(row, call, key)


def found_in(row: Any, call: str, key: str | None) -> FoundAnswer | None:
    """The answer a lookup's row (seq, call, data) gives the call ``call`` sent with ``key``."""
    if row is None or (key is None and row[1] != call):
        return None  # the tool was called with other arguments since: this call is meant
    return FoundAnswer(int(row[0]), str(row[1]), row[2])


def prune_answers(engine: Engine, *, unkeyed_before: datetime, keyed_before: datetime) -> int:
    """Drop answers no retry can get any more; the number dropped."""
    old_unkeyed = (_TABLE.c.key.is_(None)) & (_TABLE.c.at < wire_time(unkeyed_before))
    with engine.begin() as connection:
        gone = connection.execute(
            delete(_TABLE).where(or_(old_unkeyed, _TABLE.c.at < wire_time(keyed_before)))
        )
    return int(gone.rowcount or 0)
