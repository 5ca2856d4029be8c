"""hatp_journal.recorder.record: the signed, hash-chained Run Record (protocol.md §8).

:class:`RunStore` appends entries (append-only, one immediate transaction per entry, so
concurrent agents never fork a chain) and signs chain heads as checkpoints; :meth:`RunStore.export`
writes a self-contained :class:`RunRecordFile`; :func:`verify_record` checks one offline against
pinned keys. See ``docs/run-record.md``.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.recorder.record.chain import genesis_hash
    from hatp_journal.recorder.record.errors import BadEntry, RecordError, RunExists, UnknownEntry, UnknownRun
    from hatp_journal.recorder.record.models import (
        RECORD_FORMAT,
        Checkpoint,
        Entry,
        Run,
        RunRecordFile,
        record_schema,
    )
    from hatp_journal.recorder.record.report import Check, Problem, VerifyReport
    from hatp_journal.recorder.record.store import RunStore
    from hatp_journal.recorder.record.verify import verify_record
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.recorder.record.chain": ["genesis_hash"],
            "hatp_journal.recorder.record.errors": [
                "BadEntry",
                "RecordError",
                "RunExists",
                "UnknownEntry",
                "UnknownRun",
            ],
            "hatp_journal.recorder.record.models": [
                "RECORD_FORMAT",
                "Checkpoint",
                "Entry",
                "Run",
                "RunRecordFile",
                "record_schema",
            ],
            "hatp_journal.recorder.record.report": ["Check", "Problem", "VerifyReport"],
            "hatp_journal.recorder.record.store": ["RunStore"],
            "hatp_journal.recorder.record.verify": ["verify_record"],
        },
    )

__all__ = [
    "RECORD_FORMAT",
    "BadEntry",
    "Check",
    "Checkpoint",
    "Entry",
    "Problem",
    "RecordError",
    "Run",
    "RunExists",
    "RunRecordFile",
    "RunStore",
    "UnknownEntry",
    "UnknownRun",
    "VerifyReport",
    "genesis_hash",
    "record_schema",
    "verify_record",
]
