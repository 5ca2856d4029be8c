"""The Run Record store: append-only, hash-chained entries and signed checkpoints (protocol.md §8).

Every write is one transaction that reads the chain head and writes after it; on SQLite that is
``BEGIN IMMEDIATE``, on PostgreSQL a lock on the run's row (``run_lock.py``), so concurrent
appenders serialize instead of forking, and ``UNIQUE(run, seq)`` turns any remaining race into a
retry, never a branch.

``append`` runs once per recorded call, so it skips the ORM: on SQLite it drives a driver
connection it keeps (``kept_connection.py``) directly (``BEGIN IMMEDIATE``, the head, the insert,
``COMMIT``: the same transaction, a tenth of the time), elsewhere it uses SQLAlchemy Core. A run's
genesis hash is read once and kept, since a run's id, agent, principal and opening time never
change. The entry it returns is the one it sealed, not parsed back from the bytes it wrote when
they would parse to the very same values (plain JSON).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, bindparam, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlmodel import Session, SQLModel, select

from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.record.answers import (
    KeptAnswer,
    answer_row,
)
from hatp_journal.recorder.record.chain import entry_id, genesis_hash, seal_and_plain
from hatp_journal.recorder.record.committer import Append, GroupCommit
from hatp_journal.recorder.record.errors import BadEntry, RunExists
from hatp_journal.recorder.record.kinds import EntryKind
from hatp_journal.recorder.record.models import (
    Checkpoint,
    Entry,
    Run,
)
from hatp_journal.recorder.record.run_lock import lock_run_head
from hatp_journal.recorder.record.store_reads import (
    _CHECKPOINT_TABLE,
    _ENTRY_TABLE,
    StoreReads,
    _canonical_directory,
    _checkpoint_model,
    _entry_model,
    _get_run,
    _head,
    _run_model,
)
from hatp_journal.recorder.record.tables import (
    RecCheckpoint,
    RecDirectory,
    RecRun,
)

_APPEND_ATTEMPTS = 20
"""Retries after losing a race on ``UNIQUE(run, seq)`` (only databases without BEGIN IMMEDIATE)."""

_ANSWER_TABLE = SQLModel.metadata.tables["rec_answer"]
_TOKEN_TABLE = SQLModel.metadata.tables["rec_token"]

# The append's statements, for the driver (SQLite) and for Core (any other database).
_HEAD_SQL = "SELECT seq, hash FROM rec_entry WHERE run = ? ORDER BY seq DESC LIMIT 1"
_INSERT_ENTRY_SQL = "INSERT INTO rec_entry (run, seq, kind, hash, data) VALUES (?, ?, ?, ?, ?)"
_INSERT_TOKEN_SQL = "INSERT OR IGNORE INTO rec_token (digest, server, token) VALUES (?, ?, ?)"
_INSERT_ANSWER_SQL = (
    "INSERT INTO rec_answer (run, seq, tool, call, key, at, data) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_CHECKPOINT_SQL = (
    "INSERT INTO rec_checkpoint (run, size, head, at, reason, kid, sig) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_CHECKPOINT_COLUMNS = ("run", "size", "head", "at", "reason", "kid", "sig")
_HEAD = (
    select(_ENTRY_TABLE.c.seq, _ENTRY_TABLE.c.hash)
    .where(_ENTRY_TABLE.c.run == bindparam("run"))
    .order_by(_ENTRY_TABLE.c.seq.desc())
    .limit(1)
)


class RunStore(StoreReads):
    """Runs, their append-only entries, and the Recorder's signed checkpoints.

    ``store`` is a SQLite path, a SQLAlchemy URL, or an engine. ``checkpoint_every`` signs the
    head after every N entries (0 turns that off). There is deliberately no way to edit or
    delete an entry.
    """

    # -- runs -----------------------------------------------------------------

    def open_run(self, *, agent: str, principal: str, run_id: str | None = None) -> Run:
        """Start a run; its id is ``run_<random>`` unless given (ids are never reused)."""
        run_id = run_id if run_id is not None else "run_" + secrets.token_urlsafe(12)
        if not run_id or len(run_id) > 200:
            raise BadEntry(f"run id must be 1-200 characters, got {run_id!r}")
        try:
            run = Run(id=run_id, agent=agent, principal=principal, opened_at=wire_time(self.clock()))
        except ValidationError as error:
            raise BadEntry(f"run fields are invalid: {error}") from error
        _seal_checked(run.wire())  # agent and principal enter the genesis hash
        try:
            with self._session() as session:
                if session.get(RecRun, run_id) is not None:
                    raise RunExists(f"run {run_id!r} already exists")
                session.add(
                    RecRun(id=run.id, agent=run.agent, principal=run.principal, opened_at=run.opened_at)
                )
                session.commit()
        except IntegrityError as error:
            raise RunExists(f"run {run_id!r} already exists") from error
        return run

    # -- entries --------------------------------------------------------------

    def append(
        self,
        run_id: str,
        kind: EntryKind,
        body: dict[str, Any],
        *,
        tokens: Sequence[tuple[str, str, str]] = (),
        answer: KeptAnswer | None = None,
    ) -> Entry:
        """Append one entry after the current head, atomically; sign every N-th head.

        ``tokens`` — (digest, server, token) — are kept beside the record in the same
        transaction: the entry names each by its digest only (``recorder/intake/tokens.py``). So is
        ``answer``, what the agent is answered, for a retry of the call (``answers.py``).
        """
        _check_entry(kind, body)
        for attempt in range(_APPEND_ATTEMPTS):
            try:
                return self._append_once(run_id, kind, body, tokens, answer)
            except IntegrityError:
                # Another writer took this seq; read the new head and try again.
                if attempt == _APPEND_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def append_async(
        self,
        run_id: str,
        kind: EntryKind,
        body: dict[str, Any],
        *,
        tokens: Sequence[tuple[str, str, str]] = (),
        answer: KeptAnswer | None = None,
    ) -> Entry:
        """:meth:`append` for async code: the event loop runs on while the entry is made durable.

        A writer thread commits; appends that arrive together share one transaction (and one
        fsync). The entry is returned once it is committed, as durably as :meth:`append`.
        """
        _check_entry(kind, body)
        if self._group is None:
            self._group = GroupCommit(
                self.append_many, lambda one: self.append(*one[:3], tokens=one[3], answer=one[4])
            )
        return await self._group.append((run_id, kind, body, tuple(tokens), answer))

    def append_many(self, appends: Sequence[Append]) -> list[Entry]:
        """Several appends (run, kind, body, tokens, answer) in one transaction, each after its run's head.

        All or none: any failure rolls every one of them back and raises.
        """
        for _, kind, body, _, _ in appends:
            _check_entry(kind, body)
        return self._append_batch(appends)

    def _append_once(
        self,
        run_id: str,
        kind: EntryKind,
        body: dict[str, Any],
        tokens: Sequence[tuple[str, str, str]],
        answer: KeptAnswer | None,
    ) -> Entry:
        return self._append_batch([(run_id, kind, body, tuple(tokens), answer)])[0]

    def _append_batch(self, appends: Sequence[Append]) -> list[Entry]:
        geneses = {run: self._genesis_of(run) for run, _, _, _, _ in appends}
        if self._sqlite_driver:
            return self._append_sqlite(appends, geneses)
        return self._append_core(appends, geneses)

    def _genesis_of(self, run_id: str) -> str:
        """The run's genesis hash; :class:`UnknownRun` if there is no such run."""
        genesis = self._genesis.get(run_id) if isinstance(run_id, str) else None
        if genesis is None:
            with self._session() as session:
                genesis = genesis_hash(_run_model(_get_run(session, run_id)))
            self._genesis[run_id] = genesis
        return genesis

    def _sealed(
        self, run_id: str, seq: int, kind: str, body: dict[str, Any], head: str
    ) -> tuple[bytes, Entry]:
        """The canonical bytes of entry ``seq`` after ``head``, and the entry (its hash theirs)."""
        hashed = {
            "run": run_id,
            "seq": seq,
            "id": entry_id(seq),
            "time": wire_time(self.clock()),
            "kind": kind,
            "body": body,
            "prevHash": head,
        }
        data, digest, plain = _seal_checked(hashed)
        return data, _sealed_entry(hashed, data, digest, plain)

    def _every_n(self, run_id: str, seq: int, digest: str) -> dict[str, Any] | None:
        """The checkpoint to sign along with entry ``seq``, if it is an N-th one."""
        if self.checkpoint_every and seq % self.checkpoint_every == 0:
            return self._sign(run_id, seq, digest, "every-n")
        return None

    def _append_sqlite(self, appends: Sequence[Append], geneses: Mapping[str, str]) -> list[Entry]:
        """One ``BEGIN IMMEDIATE`` transaction on the kept driver connection."""
        made: list[Entry] = []
        heads: dict[str, tuple[int, str]] = {}
        statement = "BEGIN IMMEDIATE"
        with self._appender.driver() as driver:
            try:
                driver.execute(statement)
                try:
                    for run_id, kind, body, tokens, answer in appends:
                        if run_id not in heads:
                            statement = _HEAD_SQL
                            last = driver.execute(statement, (run_id,)).fetchone()
                            heads[run_id] = (last[0], last[1]) if last is not None else (0, geneses[run_id])
                        seq, head = heads[run_id][0] + 1, heads[run_id][1]
                        data, entry = self._sealed(run_id, seq, kind, body, head)
                        statement = _INSERT_ENTRY_SQL
                        driver.execute(statement, (run_id, seq, kind, entry.hash, data))
                        statement = _INSERT_TOKEN_SQL
                        for token in tokens:
                            driver.execute(statement, token)
                        if answer is not None:
                            statement = _INSERT_ANSWER_SQL
                            driver.execute(statement, tuple(answer_row(run_id, seq, answer).values()))
                        checkpoint = self._every_n(run_id, seq, entry.hash)
                        if checkpoint is not None:
                            statement = _INSERT_CHECKPOINT_SQL
                            driver.execute(statement, tuple(checkpoint[name] for name in _CHECKPOINT_COLUMNS))
                        heads[run_id] = (seq, entry.hash)
                        made.append(entry)
                    statement = "COMMIT"
                    driver.execute(statement)
                finally:
                    if driver.in_transaction:
                        driver.rollback()
            except sqlite3.Error as error:
                # Raised as SQLAlchemy raises it elsewhere (IntegrityError on a lost seq race, …).
                raise DBAPIError.instance(statement, None, error, sqlite3.Error) from error
        return made

    def _append_core(self, appends: Sequence[Append], geneses: Mapping[str, str]) -> list[Entry]:
        """One transaction through SQLAlchemy Core (immediate on a toolkit SQLite engine).

        Rows go in one ``executemany`` per table: on PostgreSQL, psycopg pipelines them, so a
        batch costs a few round trips instead of one per entry.
        """
        made: list[Entry] = []
        heads: dict[str, tuple[int, str]] = {}
        entries: list[dict[str, Any]] = []
        tokens: dict[str, dict[str, str]] = {}
        checkpoints: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        with self.engine.begin() as connection:
            # Runs locked in one order by every writer: two batches never wait on each other in a circle.
            for run_id in sorted(geneses):
                lock_run_head(connection, run_id)
            for run_id, kind, body, kept, answer in appends:
                if run_id not in heads:
                    last = connection.execute(_HEAD, {"run": run_id}).first()
                    heads[run_id] = (last[0], last[1]) if last is not None else (0, geneses[run_id])
                seq, head = heads[run_id][0] + 1, heads[run_id][1]
                data, entry = self._sealed(run_id, seq, kind, body, head)
                entries.append({"run": run_id, "seq": seq, "kind": kind, "hash": entry.hash, "data": data})
                for token_digest, server, token in kept:
                    tokens[token_digest] = {"digest": token_digest, "server": server, "token": token}
                if answer is not None:
                    answers.append(answer_row(run_id, seq, answer))
                checkpoint = self._every_n(run_id, seq, entry.hash)
                if checkpoint is not None:
                    checkpoints.append(checkpoint)
                heads[run_id] = (seq, entry.hash)
                made.append(entry)
            connection.execute(insert(_ENTRY_TABLE), entries)
            if tokens:
                # A retried call's token may be kept already: skip it, don't fail the entry.
                connection.execute(_insert_new_tokens(connection), list(tokens.values()))
            if answers:
                connection.execute(insert(_ANSWER_TABLE), answers)
            if checkpoints:
                connection.execute(insert(_CHECKPOINT_TABLE), checkpoints)
        return made

    # -- checkpoints ----------------------------------------------------------

    def checkpoint(self, run_id: str, reason: str) -> Checkpoint:
        """Sign the run's head now (reasons: ``close``, ``approval``, ``every-n``, ``manual``, …)."""
        with self._session() as session:
            row = self._checkpoint_in(session, _get_run(session, run_id), reason)
            session.commit()
            return _checkpoint_model(row)

    def close_run(self, run_id: str) -> Checkpoint:
        """Sign a ``close`` checkpoint; the first close also sets the run's ``closedAt``.

        Entries may still be appended after close (reversal records, remedies); each later
        export signs a fresh head.
        """
        with self._session() as session:
            run = _get_run(session, run_id)
            row = self._checkpoint_in(session, run, "close")
            if run.closed_at is None:
                run.closed_at = row.at
                session.add(run)
            session.commit()
            return _checkpoint_model(row)

    def _checkpoint_in(self, session: Session, run: RecRun, reason: str) -> RecCheckpoint:
        if not isinstance(reason, str) or not reason:
            raise BadEntry(f"checkpoint reason must be a non-empty string, got {reason!r}")
        lock_run_head(session.connection(), run.id)
        size, head = _head(session, run)
        row = RecCheckpoint(**self._sign(run.id, size, head, reason))
        session.add(row)
        return row

    def keep_directory(self, snapshot: Mapping[str, Any]) -> str:
        """Keep the directory as it stands at a decision; returns the digest the decision names.

        Exports carry every snapshot their decisions name, so a verifier checks each signer's key
        and role against the directory of that moment.
        """
        data, digest = _canonical_directory(snapshot)
        with self._session() as session:
            if session.get(RecDirectory, digest) is None:
                session.add(RecDirectory(digest=digest, data=data))
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()  # kept by another writer at the same moment
        return digest

    # -- directories ----------------------------------------------------------

    # -- export ---------------------------------------------------------------


def _insert_new_tokens(connection: Connection) -> Any:
    """INSERT of token rows that skips a digest already kept (both dialects say it the same way)."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    return dialect.insert(_TOKEN_TABLE).on_conflict_do_nothing(index_elements=["digest"])


def _check_entry(kind: Any, body: Any) -> None:
    if not isinstance(kind, str) or not kind:
        raise BadEntry(f"entry kind must be a non-empty string, got {kind!r}")
    if not isinstance(body, dict):
        raise BadEntry(f"entry body must be a JSON object, got {type(body).__name__}")


def _seal_checked(hashed: dict[str, Any]) -> tuple[bytes, str, bool]:
    try:
        return seal_and_plain(hashed)
    except (ValueError, TypeError, RecursionError) as error:
        # NaN, integers beyond 2^53, lone surrogates, non-JSON types, absurd depth.
        raise BadEntry(f"not canonical JSON: {error}") from error


def _sealed_entry(hashed: dict[str, Any], data: bytes, digest: str, plain: bool) -> Entry:
    """The entry just sealed, equal to what reading ``data`` back gives (``_entry_model``).

    Plain JSON parses back to the very values it was written from, so those are validated as
    they are; anything else (a float, a tuple, an enum) is read back from its bytes, as stored.
    """
    if plain:
        return Entry.model_validate({**hashed, "hash": digest})
    return _entry_model(data, digest)
