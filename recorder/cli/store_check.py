"""``hatp-recorder store-check``: is the Recorder's store there, and is its schema the one this code knows?

Reads the ``hatp_schema`` versions of the store's parts and changes nothing (starting a Recorder
creates or migrates them). Exit 0: usable as is, or after the migration the next start runs;
2: unreachable, never created, or written by a later version (a ``STORE_…`` code on stderr).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Table

from hatp_journal.recorder.intake.pins import PINS_SCHEMA, PINS_TABLES
from hatp_journal.recorder.policy.stored_ledger import LEDGER_SCHEMA
from hatp_journal.recorder.policy.stored_ledger import TABLES as LEDGER_TABLES
from hatp_journal.recorder.record.answers import ANSWERS_SCHEMA, ANSWERS_TABLES
from hatp_journal.recorder.record.tables import RECORD_SCHEMA
from hatp_journal.recorder.record.tables import TABLES as RECORD_TABLES
from hatp_journal.recorder.record.witnessed import WITNESSED_SCHEMA, WITNESSED_TABLES
from hatp_journal.recorder.runs.fleet_lease import FLEET_LEASE_SCHEMA, FLEET_LEASE_TABLES
from hatp_journal.recorder.runs.keys import RUNS_SCHEMA, RUNS_TABLES
from hatp_journal.recorder.undo.lease import LEASE_SCHEMA, LEASE_TABLES
from hatp_journal.recorder.web.signin_store import WEB_SCHEMA, WEB_TABLES
from hatp_journal.toolkit.errors import StoreCode, StoreError
from hatp_journal.toolkit.store import UNDO_SCHEMA, open_store_engine, shown_url
from hatp_journal.toolkit.store_schema import PartStatus, check_schema

RECORDER_PARTS = {
    "record": RECORD_SCHEMA,
    "answers": ANSWERS_SCHEMA,
    "pins": PINS_SCHEMA,
    "ledger": LEDGER_SCHEMA,
    "lease": LEASE_SCHEMA,
    "fleet-lease": FLEET_LEASE_SCHEMA,
    "runs": RUNS_SCHEMA,
    "web": WEB_SCHEMA,
    "undo": UNDO_SCHEMA,
    "witnessed": WITNESSED_SCHEMA,
}
"""The parts of a Recorder's store and the versions this code writes."""

_PART_TABLES: dict[str, list[Table]] = {
    "record": RECORD_TABLES,
    "answers": ANSWERS_TABLES,
    "pins": PINS_TABLES,
    "ledger": LEDGER_TABLES,
    "lease": LEASE_TABLES,
    "fleet-lease": FLEET_LEASE_TABLES,
    "runs": RUNS_TABLES,
    "web": WEB_TABLES,
    "witnessed": WITNESSED_TABLES,
}
PART_TABLES = {part: [table.name for table in tables] for part, tables in _PART_TABLES.items()}
"""The tables of each part (the ``undo`` part's version is recorded when the store is first opened)."""


def store_check(url: str) -> list[str]:
    """One line per part (``part  stored  expected  what it means``); raises :class:`StoreError`."""
    if "://" not in url and not Path(url).exists():
        raise StoreError(
            f"no Recorder store at {shown_url(url)} yet: start the Recorder once",
            StoreCode.STORE_SCHEMA_MISSING,
        )
    engine = open_store_engine(url)
    try:
        found = check_schema(engine, RECORDER_PARTS, PART_TABLES)
    finally:
        engine.dispose()
    if all(part.found is None and not part.created for part in found):
        raise StoreError(
            f"no Recorder store at {shown_url(url)} yet: start the Recorder once",
            StoreCode.STORE_SCHEMA_MISSING,
        )
    newer = [part for part in found if part.found is not None and part.found > part.expected]
    if newer:
        shown = ", ".join(f"{part.part} {part.found} (this code: {part.expected})" for part in newer)
        raise StoreError(f"schema newer than this code: {shown}", StoreCode.STORE_SCHEMA_NEWER)
    return [_line(part) for part in found]


def _line(part: PartStatus) -> str:
    if part.found is None and part.created:
        said = "created, not used yet (its version is recorded on first use)"
    elif part.found is None:
        said = "not created yet (made on first use)"
    elif part.ok:
        said = "ok"
    else:
        said = "older: migrated on the next start"
    return f"{part.part}\t{part.found or '-'}\t{part.expected}\t{said}"
