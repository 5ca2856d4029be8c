"""Exporting a run as the Recorder holds it: the record, the keys it pinned, the directories."""

from __future__ import annotations

from sqlmodel import Session, col, select

from hatp_journal.recorder.pins import PinStore, RecPin
from hatp_journal.recorder.record import RunRecordFile, RunStore
from hatp_journal.recorder.record.models import PinnedKey


def export_run(store: RunStore, run: str) -> RunRecordFile:
    """``run`` as a self-contained file, with the pinned key of every server it talked to."""
    named = (entry.body.get("server") for entry in store.entries(run))
    servers = sorted({name for name in named if isinstance(name, str)})
    return store.export(run, pinned_keys(store, servers))


def pinned_keys(store: RunStore, servers: list[str]) -> dict[str, list[PinnedKey]]:
    """The keys pinned for ``servers`` (those never met are left out), with when each was pinned."""
    PinStore(store.engine)  # a store that never pinned has no pin table yet
    with Session(store.engine) as session:
        rows = session.exec(
            select(RecPin)
            .where(col(RecPin.server).in_(servers))
            .order_by(col(RecPin.server), col(RecPin.kid))
        ).all()
    found: dict[str, list[PinnedKey]] = {}
    for row in rows:
        found.setdefault(row.server, []).append(
            PinnedKey(kid=row.kid, public_key=row.public_key, pinned_at=row.pinned_at)
        )
    return found
