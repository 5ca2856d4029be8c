"""Exporting a run as the Recorder holds it: the record, the keys it pinned, the directories."""

from __future__ import annotations

from hatp_journal.recorder.record import RunRecordFile, RunStore


def export_run(store: RunStore, run: str) -> RunRecordFile:
    """``run`` as a self-contained file, with the pinned key of every server it talked to."""
    return store.export(run)
