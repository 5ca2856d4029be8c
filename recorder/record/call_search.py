"""Finding the calls that may name a resource, in the database rather than entry by entry.

A plan warns about other runs that read what it would change (``undo/planner.py``). Parsing every
call of every run for that made each plan cost the whole store: at 961 runs and 9,030 entries a
plan took seconds. Entries are stored as the RFC 8785 bytes that were hashed, so a call with a
string value equal to a name holds that name's own canonical bytes (quotes and escapes included);
the database keeps only those calls, and the planner then checks each one exactly as before.
A call this search returns may still name nothing (the bytes can sit inside a longer text); a call
it leaves out cannot name any of the names.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, LargeBinary, bindparam, false, func, or_, select, text
from sqlmodel import Session, SQLModel

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.layout import parse_json
from hatp_journal.recorder.record.models import Entry

if TYPE_CHECKING:
    from hatp_journal.recorder.record.store import RunStore

_ENTRY = SQLModel.metadata.tables["rec_entry"]

MAX_NAMES = 200
"""More names than this and the search keeps every call: one long OR is slower than reading."""


def calls_naming(store: RunStore, names: Collection[str], *, besides: str) -> list[tuple[str, Entry]]:
    """(run id, entry) of each call of a run other than ``besides`` whose stored bytes hold one of
    ``names`` as a JSON string, in run and entry order."""
    if not names:
        return []
    query = (
        select(_ENTRY.c.run, _ENTRY.c.data, _ENTRY.c.hash)
        .where(_ENTRY.c.kind == "call", _ENTRY.c.run != besides, _naming(store, names))
        .order_by(_ENTRY.c.run, _ENTRY.c.seq)
    )
    with Session(store.engine) as session:
        rows = session.connection().execute(query).all()
    return [(run, Entry.model_validate({**parse_json(data), "hash": digest})) for run, data, digest in rows]


def _naming(store: RunStore, names: Collection[str]) -> ColumnElement[bool]:
    if len(names) > MAX_NAMES:
        return ~false()
    needles = [canonical_bytes(name) for name in names]
    if store.engine.dialect.name == "sqlite":
        return or_(*(func.instr(_ENTRY.c.data, needle) > 0 for needle in needles))
    # PostgreSQL: position() finds bytes in bytea.
    return or_(
        *(
            text(f"position(:needle{i} in rec_entry.data) > 0").bindparams(
                bindparam(f"needle{i}", needle, type_=LargeBinary)
            )
            for i, needle in enumerate(needles)
        )
    )
