"""Exporting a run as the Recorder holds it: the record, the keys it pinned, the directories."""

from __future__ import annotations

import secrets
from pathlib import Path

from hatp_journal.recorder.record import Checkpoint, RunRecordFile, RunStore


def export_run(store: RunStore, run: str) -> RunRecordFile:
    """``run`` as a self-contained file, with the pinned key of every server it talked to."""
    return store.export(run)


def export_run_to(store: RunStore, run: str, path: Path) -> Checkpoint:
    """Write what ``export_run(store, run).to_bytes()`` holds to ``path``, entry by entry, so a run of
    any length is exported in little memory; return the checkpoint the file ends with.

    The file appears whole or not at all: it is written beside ``path`` and renamed over it.
    """
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    out = partial.open("xb")
    try:
        with out:
            head = store.export_to(run, out)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return head
