"""Exporting a run as the Recorder holds it: the record, the keys it pinned, the directories."""

from __future__ import annotations

import secrets
from pathlib import Path

from sqlmodel import Session, col, select

from hatp_journal.recorder.pins import PinStore, RecPin
from hatp_journal.recorder.record import Checkpoint, RunRecordFile, RunStore
from hatp_journal.recorder.record.models import PinnedKey


def export_run(store: RunStore, run: str) -> RunRecordFile:
    """``run`` as a self-contained file, with the pinned key of every server it talked to."""
    named = (entry.body.get("server") for entry in store.entries(run))
    servers = sorted({name for name in named if isinstance(name, str)})
    return store.export(run, pinned_keys(store, servers))


def export_run_to(store: RunStore, run: str, path: Path) -> Checkpoint:
    """Write what ``export_run(store, run).to_bytes()`` holds to ``path``, entry by entry, so a run of
    any length is exported in little memory; return the checkpoint the file ends with.

    The file appears whole or not at all: it is written beside ``path`` and renamed over it.
    """
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    out = partial.open("xb")
    try:
        with out:
            head = store.export_to(run, out, lambda servers: pinned_keys(store, sorted(servers)))
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return head


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
