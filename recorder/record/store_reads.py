"""What the Run Record store reads: runs, entries, checkpoints, directories, and a run's export.

:class:`~hatp_journal.recorder.record.store.RunStore` builds on it with what writes (appends,
checkpoints); the write path and its statements stay there.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy import Engine, Row, bindparam, inspect, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, SQLModel, col, select

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.record.answers import (
    FIND_BY_KEY_SQL,
    FIND_BY_TOOL_SQL,
    FoundAnswer,
    ensure_answers,
    find_answer,
    found_in,
)
from hatp_journal.recorder.record.chain import genesis_hash
from hatp_journal.recorder.record.committer import GroupCommit
from hatp_journal.recorder.record.entry_bodies import Mentioned, mentioned
from hatp_journal.recorder.record.errors import RecordError, UnknownEntry, UnknownRun
from hatp_journal.recorder.record.gc_pause import gc_paused
from hatp_journal.recorder.record.kept_connection import KeptConnection
from hatp_journal.recorder.record.layout import parse_json
from hatp_journal.recorder.record.models import (
    Checkpoint,
    Entry,
    PinnedKey,
    Run,
    RunRecordFile,
    checkpoint_payload,
)
from hatp_journal.recorder.record.run_lock import lock_run_head
from hatp_journal.recorder.record.tables import (
    RECORD_SCHEMA,
    TABLES,
    RecCheckpoint,
    RecDirectory,
    RecEntry,
    RecRun,
)
from hatp_journal.recorder.record.witnessed import ensure_witnessed, kept_cosignatures
from hatp_journal.toolkit.signing import SigningKey, VerifyKey
from hatp_journal.toolkit.store import create_store_engine
from hatp_journal.toolkit.store_schema import ensure_schema
from hatp_journal.toolkit.wire import PublicKey, Receipt

ServerKeys = Mapping[str, Sequence[PinnedKey | PublicKey | VerifyKey]]
"""Server → its keys as the Recorder pinned them, shipped in an export."""

_ENTRY_ID = re.compile(r"^e([1-9][0-9]{0,17})$")

_ENTRY_TABLE = SQLModel.metadata.tables["rec_entry"]

_CHECKPOINT_TABLE = SQLModel.metadata.tables["rec_checkpoint"]


_ENTRY_ROWS_SQL = "SELECT seq, hash, data FROM rec_entry WHERE run = ? AND seq <= ? ORDER BY seq"


class StoreReads:
    """A store's engine and keys, and everything read from it (nothing here writes an entry)."""

    def __init__(
        self,
        store: str | Path | Engine,
        key: SigningKey,
        *,
        checkpoint_every: int = 100,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be 0 (off) or positive, not {checkpoint_every}")
        self._owns_engine = not isinstance(store, Engine)
        self.engine = create_store_engine(store) if not isinstance(store, Engine) else store
        ensure_schema(self.engine, "record", RECORD_SCHEMA, TABLES)
        ensure_answers(self.engine)
        ensure_witnessed(self.engine)
        self.key = key
        self.checkpoint_every = checkpoint_every
        self.clock = clock
        self._public = key.public
        # The stdlib driver speaks plain SQL with ``?`` parameters; other databases go through Core.
        self._sqlite_driver = (
            self.engine.dialect.name == "sqlite" and self.engine.dialect.driver == "pysqlite"
        )
        self._genesis: dict[str, str] = {}  # run id -> genesis hash, for runs known to exist
        self._appender = KeptConnection(self.engine)  # the SQLite driver road's connection
        self._group: GroupCommit | None = None  # the writer thread of append_async, once used

    def _session(self) -> Session:
        # Objects stay readable after commit: re-reading them would open another transaction.
        return Session(self.engine, expire_on_commit=False)

    @property
    def public_key(self) -> VerifyKey:
        """The Recorder's public key, to pin in verifiers."""
        return self._public

    def dispose(self) -> None:
        """Release the database connections (only of an engine this store created)."""
        if self._group is not None:
            self._group.close()
            self._group = None
        self._appender.close()
        if self._owns_engine:
            self.engine.dispose()

    def run(self, run_id: str) -> Run:
        """The run ``run_id``."""
        with self._session() as session:
            return _run_model(_get_run(session, run_id))

    def runs(self) -> list[Run]:
        """Every run, oldest first."""
        with self._session() as session:
            rows = session.exec(select(RecRun).order_by(col(RecRun.opened_at), col(RecRun.id))).all()
            return [_run_model(row) for row in rows]

    def find_answer(
        self, run_id: str, *, tool: str, call: str, key: str | None, since: datetime
    ) -> FoundAnswer | None:
        """The answer kept for a retry of a call (``answers.find_answer``); on SQLite a plain read
        on the appends' connection, which takes no write lock."""
        if not self._sqlite_driver:
            return find_answer(self.engine, run_id, tool=tool, call=call, key=key, since=since)
        statement, named = (FIND_BY_KEY_SQL, key) if key is not None else (FIND_BY_TOOL_SQL, tool)
        with self._appender.driver() as driver:
            try:
                row = driver.execute(statement, (run_id, wire_time(since), named)).fetchone()
            except sqlite3.Error as error:
                raise DBAPIError.instance(statement, None, error, sqlite3.Error) from error
        return found_in(row, call, key)

    def entries(self, run_id: str) -> list[Entry]:
        """The run's entries in order, parsed from the bytes stored."""
        with self._session() as session, gc_paused():
            _get_run(session, run_id)
            return [_entry_model(row.data, row.hash) for row in _entry_rows(session, run_id)]

    def entry(self, run_id: str, entry_id: str) -> Entry:
        """One entry by id (``e1``, ``e2``, …)."""
        match = _ENTRY_ID.fullmatch(entry_id)
        with self._session() as session:
            _get_run(session, run_id)
            row = session.get(RecEntry, (run_id, int(match.group(1)))) if match else None
            if row is None:
                raise UnknownEntry(f"run {run_id!r} has no entry {entry_id!r}")
            return _entry_model(row.data, row.hash)

    def latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The most recently signed head of the run, if any."""
        with self._session() as session:
            _get_run(session, run_id)
            rows = _checkpoint_rows(session, run_id, latest=True)
            return _checkpoint_model(rows[0]) if rows else None

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint of the run, in the order signed."""
        with self._session() as session:
            _get_run(session, run_id)
            return [_checkpoint_model(row) for row in _checkpoint_rows(session, run_id)]

    def signed_since(self, after: int) -> tuple[int, list[str]]:
        """The runs with a checkpoint signed after row ``after`` (0: any), and the last row's number:
        how a witness sender (``recorder/witness/sender.py``) finds heads signed by any process."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(_CHECKPOINT_TABLE.c.id, _CHECKPOINT_TABLE.c.run)
                .where(_CHECKPOINT_TABLE.c.id > after)
                .order_by(_CHECKPOINT_TABLE.c.id)
            ).all()
        return (rows[-1][0] if rows else after), list(dict.fromkeys(row[1] for row in rows))

    def entry_bytes(self, run_id: str, after: int, upto: int) -> list[bytes]:
        """The stored (hashed, canonical) bytes of entries ``after``+1 … ``upto`` of the run, in order."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(_ENTRY_TABLE.c.data)
                .where(
                    _ENTRY_TABLE.c.run == run_id,
                    _ENTRY_TABLE.c.seq > after,
                    _ENTRY_TABLE.c.seq <= upto,
                )
                .order_by(_ENTRY_TABLE.c.seq)
            ).all()
        return [bytes(row[0]) for row in rows]

    def directory(self, digest: str) -> dict[str, Any] | None:
        """The directory snapshot kept under ``digest``."""
        with self._session() as session:
            row = session.get(RecDirectory, digest)
            return parse_json(row.data) if row is not None else None

    def _sign(self, run_id: str, size: int, head: str, reason: str) -> dict[str, Any]:
        """A checkpoint row's columns: the head signed now."""
        at = wire_time(self.clock())
        receipt = self.key.sign(checkpoint_payload(run_id, size, head, at, reason), at)
        return {
            "run": run_id,
            "size": size,
            "head": head,
            "at": at,
            "reason": reason,
            "kid": receipt.kid,
            "sig": receipt.sig,
        }

    def export(
        self,
        run_id: str,
        server_keys: ServerKeys | None = None,
    ) -> RunRecordFile:
        """A self-contained Run Record whose last checkpoint signs its last entry.

        Read in one transaction (and a fresh ``export`` checkpoint signed in it when the head
        moved since the last one), so the file is a consistent snapshot even while agents append.
        ``server_keys`` (server → its keys) is shipped as given; by default, the keys this store
        pinned for every server the run talked to, with when each was pinned. The directory
        snapshots the run's decisions name are shipped with it.
        """
        with self._session() as session:
            run = _get_run(session, run_id)
            lock_run_head(session.connection(), run_id)
            entries = [_entry_model(row.data, row.hash) for row in _entry_rows(session, run_id)]
            rows = list(_checkpoint_rows(session, run_id))
            head = entries[-1].hash if entries else genesis_hash(_run_model(run))
            if not rows or (rows[-1].size, rows[-1].head) != (len(entries), head):
                rows.append(RecCheckpoint(**self._sign(run_id, len(entries), head, "export")))
                session.add(rows[-1])
                session.commit()
            if server_keys is None:
                server_keys = _pinned_keys(session, (mentioned(entry).server for entry in entries))
            directories: dict[str, dict[str, Any]] = {}
            for digest in _directory_digests(entries):
                row = session.get(RecDirectory, digest)
                if row is not None:
                    directories[digest] = parse_json(row.data)
            return RunRecordFile(
                run=_run_model(run),
                entries=entries,
                checkpoints=[_checkpoint_model(row) for row in rows],
                recorder_key=self._public.wire(),
                server_keys=_shipped(server_keys, self.key),
                directories=directories,
                cosignatures=kept_cosignatures(session.connection(), run_id, len(entries)) or None,
            )

    def export_to(
        self,
        run_id: str,
        out: BinaryIO,
        server_keys: ServerKeys | None = None,
    ) -> Checkpoint:
        """Write what ``export(run_id).to_bytes()`` would, entry by entry; return its last checkpoint.

        Memory does not grow with the run (only with its checkpoints and directories): each entry
        goes out as the bytes stored, its ``"hash"`` member put in its canonical place. Without
        ``server_keys``, the servers the entries name are gathered as they go (``serverKeys`` comes
        after the entries in the file) and the keys this store pinned for them are shipped.

        The head is read and, if it moved, signed in one short transaction, then the entries up to
        it are read in another: entries never change once written, so this is the snapshot
        ``export`` reads, without keeping appenders waiting while the file is written. If this
        raises, what it wrote to ``out`` is not a Run Record.
        """
        header, size, head = self._export_header(run_id)
        before, _ = _around_entries(header)
        out.write(before)
        servers: set[Any] = set()
        count, last = 0, head if size == 0 else ""
        with closing(self._entry_rows_to(run_id, size)) as rows:
            for seq, digest, data in rows:
                count += 1
                if seq != count:
                    break
                # "hash" sorts between body and id. A JSON string never holds ``,"`` (its quotes are
                # escaped), so the last ``,"id":"`` of the stored bytes starts the entry's own id.
                cut = data.rindex(b',"id":"')
                comma = b"," if count > 1 else b""
                out.write(b"".join((comma, data[:cut], b',"hash":"', digest.encode(), b'"', data[cut:])))
                last = digest
                if server_keys is None:
                    servers.add(Mentioned.model_validate(parse_json(data)["body"]).server)
        if (count, last) != (size, head):
            raise RecordError(f"run {run_id!r}: the stored entries are not the {size} its head was read at")
        if server_keys is None:
            with self._session() as session:
                server_keys = _pinned_keys(session, servers)
        _, after = _around_entries(header.model_copy(update={"server_keys": _shipped(server_keys, self.key)}))
        out.write(after)
        return header.checkpoints[-1]

    def _export_header(self, run_id: str) -> tuple[RunRecordFile, int, str]:
        """The file without entries or server keys, the run's size and its head, signed if it moved."""
        with self._session() as session:
            row = _get_run(session, run_id)
            run = _run_model(row)
            lock_run_head(session.connection(), run_id)
            size, head = _head(session, row)
            rows = list(_checkpoint_rows(session, run_id))
            if not rows or (rows[-1].size, rows[-1].head) != (size, head):
                rows.append(RecCheckpoint(**self._sign(run_id, size, head, "export")))
                session.add(rows[-1])
                session.commit()
            decisions = session.exec(
                select(RecEntry.data)
                .where(RecEntry.run == run_id, RecEntry.kind == "decision", col(RecEntry.seq) <= size)
                .order_by(col(RecEntry.seq))
            )
            named = (Mentioned.model_validate(parse_json(data)["body"]).directory for data in decisions)
            directories: dict[str, dict[str, Any]] = {}
            for digest in dict.fromkeys(d for d in named if isinstance(d, str)):
                kept = session.get(RecDirectory, digest)
                if kept is not None:
                    directories[digest] = parse_json(kept.data)
            header = RunRecordFile(
                run=run,
                entries=[],
                checkpoints=[_checkpoint_model(checkpoint) for checkpoint in rows],
                recorder_key=self._public.wire(),
                directories=directories,
                cosignatures=kept_cosignatures(session.connection(), run_id, size) or None,
            )
        return header, size, head

    def _entry_rows_to(self, run_id: str, size: int) -> Generator[tuple[int, str, bytes], None, None]:
        """(seq, hash, stored bytes) of entries 1..``size`` in order, fetched as they are consumed.

        On SQLite a plain (deferred) read transaction on the driver connection: a snapshot that
        keeps no appender waiting. Elsewhere SQLAlchemy Core, streaming the rows.
        """
        if not self._sqlite_driver:
            query = (
                select(_ENTRY_TABLE.c.seq, _ENTRY_TABLE.c.hash, _ENTRY_TABLE.c.data)
                .where(_ENTRY_TABLE.c.run == run_id, _ENTRY_TABLE.c.seq <= size)
                .order_by(_ENTRY_TABLE.c.seq)
            )
            with self.engine.connect() as connection:
                yield from connection.execution_options(yield_per=500).execute(query)
            return
        pooled = self.engine.raw_connection()
        try:
            driver = pooled.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            driver.execute("BEGIN")
            try:
                yield from driver.execute(_ENTRY_ROWS_SQL, (run_id, size))
            finally:
                if driver.in_transaction:
                    driver.rollback()
        finally:
            pooled.close()


def _around_entries(header: RunRecordFile) -> tuple[bytes, bytes]:
    """The file's canonical bytes before its entries (``{…,"entries":[``) and after them (``],…}``).

    RFC 8785 sorts members by name; these names are ASCII, where that is Python's order.
    """
    before: list[bytes] = []
    after: list[bytes] = []
    for name, value in sorted(header.wire().items()):
        if name != "entries":
            member = canonical_bytes(name) + b":" + canonical_bytes(value)
            (before if name < "entries" else after).append(member)
    return (
        b"{" + b"".join(member + b"," for member in before) + b'"entries":[',
        b"]" + b"".join(b"," + member for member in after) + b"}",
    )


def _shipped(server_keys: ServerKeys, recorder: SigningKey) -> dict[str, list[PinnedKey]]:
    """The keys as the file ships them: each pinned one with the Recorder's signature over its pin."""
    return {
        server: [_signed_pin(server, _pinned(key), recorder) for key in keys]
        for server, keys in server_keys.items()
    }


def _signed_pin(server: str, key: PinnedKey, recorder: SigningKey) -> PinnedKey:
    """``key`` with the Recorder's receipt over its pin, issued at ``pinnedAt`` (so an export signs
    the same bytes every time); a key handed to the export, with no ``pinnedAt``, has none."""
    if key.pinned_at is None:
        return key
    receipt = recorder.sign(key.signed(server), key.pinned_at)
    return key.model_copy(update={"receipt": receipt})


def _pinned(key: PinnedKey | PublicKey | VerifyKey) -> PinnedKey:
    if isinstance(key, PinnedKey):
        return key
    published = key.wire() if isinstance(key, VerifyKey) else key
    return PinnedKey(kid=published.kid, public_key=published.public_key)


def _pinned_keys(session: Session, servers: Iterable[Any]) -> dict[str, list[PinnedKey]]:
    """The keys pinned in this store (``rec_pin``, kept by the gateway) for ``servers`` (entries'
    ``body.server``: what is not a string names none)."""
    named = sorted({server for server in servers if isinstance(server, str)})
    if not named or not inspect(session.connection()).has_table("rec_pin"):
        return {}
    rows = session.execute(
        text(
            "SELECT server, kid, public_key, pinned_at FROM rec_pin"
            " WHERE server IN :named ORDER BY server, kid"
        ).bindparams(bindparam("named", expanding=True)),
        {"named": named},
    ).all()
    found: dict[str, list[PinnedKey]] = {}
    for server, kid, public_key, pinned_at in rows:
        found.setdefault(server, []).append(PinnedKey(kid=kid, public_key=public_key, pinned_at=pinned_at))
    return found


def _canonical_directory(snapshot: Mapping[str, Any]) -> tuple[bytes, str]:
    data = canonical_bytes(dict(snapshot))
    return data, "sha256:" + hashlib.sha256(data).hexdigest()


def _directory_digests(entries: Sequence[Entry]) -> list[str]:
    """The directory snapshots named by decisions, in first-named order."""
    named = (mentioned(entry).directory for entry in entries if entry.kind == "decision")
    return list(dict.fromkeys(d for d in named if d is not None))


def _get_run(session: Session, run_id: str) -> RecRun:
    run = session.get(RecRun, run_id) if isinstance(run_id, str) else None
    if run is None:
        raise UnknownRun(f"no run {run_id!r}")
    return run


def _head(session: Session, run: RecRun) -> tuple[int, str]:
    """(size, head hash) of the run, read inside the caller's transaction."""
    last = session.exec(
        select(RecEntry.seq, RecEntry.hash)
        .where(RecEntry.run == run.id)
        .order_by(col(RecEntry.seq).desc())
        .limit(1)
    ).first()
    if last is None:
        return 0, genesis_hash(_run_model(run))
    return last[0], last[1]


def _entry_rows(session: Session, run_id: str) -> Sequence[Row[tuple[bytes, str]]]:
    """(stored bytes, hash) of every entry of the run in order: two columns, no ORM object per row."""
    query = (
        select(_ENTRY_TABLE.c.data, _ENTRY_TABLE.c.hash)
        .where(_ENTRY_TABLE.c.run == run_id)
        .order_by(_ENTRY_TABLE.c.seq)
    )
    return session.connection().execute(query).all()


def _checkpoint_rows(session: Session, run_id: str, *, latest: bool = False) -> Sequence[RecCheckpoint]:
    query = select(RecCheckpoint).where(RecCheckpoint.run == run_id)
    if latest:
        return session.exec(query.order_by(col(RecCheckpoint.id).desc()).limit(1)).all()
    return session.exec(query.order_by(col(RecCheckpoint.id))).all()


def _run_model(row: RecRun) -> Run:
    return Run(
        id=row.id, agent=row.agent, principal=row.principal, opened_at=row.opened_at, closed_at=row.closed_at
    )


def _entry_model(data: bytes, digest: str) -> Entry:
    return Entry.model_validate({**parse_json(data), "hash": digest})


def _checkpoint_model(row: RecCheckpoint) -> Checkpoint:
    return Checkpoint(
        run=row.run,
        size=row.size,
        head=row.head,
        at=row.at,
        reason=row.reason,
        receipt=Receipt(kid=row.kid, sig=row.sig, issued_at=row.at),
    )
