"""A versioned schema for every store: one row per part in ``hatp_schema``, created on start.

Each part of a store (the toolkit's undo tables, the Recorder's record, pins, ledger, lease)
has a version number. Opening a store creates the part's missing tables and records its
version in the same transaction; a store written by a later version of this code is refused
(``STORE_SCHEMA_NEWER``) rather than half-understood. Steps from one version to the next go in
``MIGRATIONS`` when a part's tables change; version 1 of every part is the schema as first
shipped, and a store made before versioning existed is taken as version 1.

Several processes may open one PostgreSQL store at once (Recorders, tool-server replicas):
creating tables there is serialized by a transaction-scoped advisory lock, so two first starts
don't collide on the catalog. On SQLite the toolkit engine's ``BEGIN IMMEDIATE`` does the same.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Column, Connection, Engine, Integer, MetaData, String, Table, inspect, select, text
from sqlalchemy.exc import DBAPIError

from hatp_journal.toolkit.errors import StoreCode, StoreError

# Kept apart from SQLModel's shared metadata: creating every model's table is not this table's job.
_METADATA = MetaData()
SCHEMA_TABLE = Table(
    "hatp_schema",
    _METADATA,
    Column("part", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
)

_SCHEMA_LOCK = 0x68617470  # "hatp": the advisory lock key that serializes schema changes on PostgreSQL

Migration = Callable[[Connection], None]
MIGRATIONS: dict[tuple[str, int], Migration] = {}
"""(part, from version) -> the step to from version + 1, run inside the opening transaction."""

_ensured: weakref.WeakKeyDictionary[Engine, set[tuple[str, int]]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PartStatus:
    """One part of a store as ``check_schema`` found it."""

    part: str
    expected: int
    found: int | None  # None: no version recorded for the part (never used in this store)
    created: bool = False  # its tables exist (made along with another part's), whatever ``found`` says

    @property
    def ok(self) -> bool:
        return self.found == self.expected


def ensure_schema(engine: Engine, part: str, version: int, tables: Sequence[Table]) -> None:
    """Create ``part``'s missing tables at ``version``, migrate an older store, refuse a newer one.

    Done once per engine and part in a process; the first call does it in one transaction.
    """
    done = _ensured.setdefault(engine, set())
    if (part, version) in done:
        return
    try:
        with engine.begin() as connection:
            _serialize(connection)
            _METADATA.create_all(connection)
            stored = _version(connection, part)
            found = stored
            if found is None and _any_table_exists(connection, tables):
                found = 1  # made before versioning: the schema as first shipped
            if found is not None and found > version:
                raise StoreError(
                    f"the store's {part} schema is version {found}, newer than this code's {version}:"
                    " upgrade hatp-journal before using this store",
                    StoreCode.STORE_SCHEMA_NEWER,
                )
            for step in range(found or version, version):
                MIGRATIONS[(part, step)](connection)
            for metadata in {table.metadata for table in tables}:
                metadata.create_all(connection, tables=[t for t in tables if t.metadata is metadata])
            _write_version(connection, part, version, stored)
    except DBAPIError as error:
        raise StoreError(f"cannot create the {part} tables: {_reason(error)}") from None
    done.add((part, version))


def check_schema(
    engine: Engine, expected: dict[str, int], tables: Mapping[str, Sequence[str]] | None = None
) -> list[PartStatus]:
    """Each part's version as stored, beside the version this code expects, and whether its
    ``tables`` (names, by part) exist; changes nothing."""
    tables = tables or {}
    try:
        with engine.connect() as connection:
            names = set(inspect(connection).get_table_names())
            versioned = SCHEMA_TABLE.name in names
            return [
                PartStatus(
                    part,
                    number,
                    _version(connection, part) if versioned else None,
                    bool(tables.get(part)) and all(name in names for name in tables.get(part, ())),
                )
                for part, number in expected.items()
            ]
    except DBAPIError as error:
        raise StoreError(f"cannot read the store: {_reason(error)}", StoreCode.STORE_UNREACHABLE) from None


def _serialize(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})


def _version(connection: Connection, part: str) -> int | None:
    row = connection.execute(select(SCHEMA_TABLE.c.version).where(SCHEMA_TABLE.c.part == part)).first()
    return None if row is None else int(row[0])


def _write_version(connection: Connection, part: str, version: int, found: int | None) -> None:
    if found is None:
        connection.execute(SCHEMA_TABLE.insert(), {"part": part, "version": version})
    elif found != version:
        connection.execute(SCHEMA_TABLE.update().where(SCHEMA_TABLE.c.part == part).values(version=version))
    # else: already at this version; nothing to write


def _any_table_exists(connection: Connection, tables: Sequence[Table]) -> bool:
    names = set(inspect(connection).get_table_names())
    return any(table.name in names for table in tables)


def _reason(error: DBAPIError) -> str:
    return str(error.orig).splitlines()[0] if error.orig is not None else type(error).__name__
