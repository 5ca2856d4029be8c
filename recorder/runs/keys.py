"""Runs that outlive a connection: run keys, claims on approved asks, and closing idle runs.

A run is agent + principal + run key. The key is the host's (``serve --run-key``, the
``HATP_RUN_KEY`` variable, or ``[recorder] run_key``) or issued by the Recorder with its answers
(``_meta["hatp/recorder"]["runKey"]``). A call that sends a key back (``_meta["hatp/runKey"]``),
from a new process or another HTTP connection, continues that run and its asks. Only a key's
SHA-256 digest is stored: the store alone can't be used to join a run.

A keyed run stays open when its process ends and closes, its head signed, once nobody has called
under its key for ``run_idle_seconds``; a key sent back after its run closed goes on in a new run,
which notes the one it continues (:meth:`RunKeys.find_or_continue`). An approved ask is claimed in
the store before its call is forwarded, so two processes calling again at once forward it once. A
claim names its holder and says when the call was sent: a claim whose holder died before sending is
taken over by the next caller; one whose holder died after sending is in doubt, never sent again
(``ClaimState``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, inspect, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.changes.links import LinkedCall, LinkIndex
from hatp_journal.recorder.config import RUN_KEY_SHAPE
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.entry_bodies import NoteBody, read_as
from hatp_journal.recorder.record.errors import UnknownRun
from hatp_journal.recorder.record.written_bodies import HostNote
from hatp_journal.recorder.runs.asks import Ask, Asks
from hatp_journal.recorder.runs.processes import process_alive
from hatp_journal.toolkit.store_schema import MIGRATIONS, ensure_schema

CONTINUED_NOTE = ("hatp", "continue_run")
"""The ``server`` and ``tool`` of the note that opens a run continuing a closed one under its key."""
RUN_KEY_META = "hatp/runKey"
"""Where a call sends its run key back: ``_meta["hatp/runKey"]``."""
_TOUCH_EVERY = timedelta(seconds=30)
"""How stale a key's ``seen_at`` may get before a call writes it again (one write, not one per call)."""


class RunKeyCode(StrEnum):
    """Stable codes for a run key that is refused (the call is journaled as refused)."""

    RUN_KEY_INVALID = "RUN_KEY_INVALID"
    RUN_KEY_UNKNOWN = "RUN_KEY_UNKNOWN"
    RUN_KEY_NOT_YOURS = "RUN_KEY_NOT_YOURS"
    RUN_CLOSED = "RUN_CLOSED"


@dataclass(frozen=True)
class RunKeyRefusal:
    """Why a run key can't be used; ``digest`` names the key in the record without giving it away."""

    code: RunKeyCode
    message: str
    digest: str | None


class RecRunKey(SQLModel, table=True):
    """A run key, by its digest, and the run it names; ``seen_at`` is the last call under it."""

    __tablename__ = "rec_run_key"

    digest: str = Field(primary_key=True)
    run: str = Field(index=True, foreign_key="rec_run.id")
    seen_at: str


class RecAskClaim(SQLModel, table=True):
    """An approved ask whose call is being forwarded: its primary key lets one caller have it."""

    __tablename__ = "rec_ask_claim"

    run: str = Field(primary_key=True, foreign_key="rec_run.id")
    ask: str = Field(primary_key=True)
    at: str
    holder: str | None = None  # host:pid:nonce of the process that claimed it (None: claimed before v2)
    sent: str | None = None  # when its holder sent the call to the server (None: not sent)


RUNS_SCHEMA = 2
"""The version of the run-key tables (``hatp_schema`` part ``runs``); 2: claims name their holder."""
RUNS_TABLES = [SQLModel.metadata.tables["rec_run_key"], SQLModel.metadata.tables["rec_ask_claim"]]
_CLAIMS = SQLModel.metadata.tables["rec_ask_claim"]
CLAIM_TTL = timedelta(minutes=10)
"""When a claim's holder on another host is taken as dead (one on this host is checked at once)."""
HOLDER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
"""This process, as its claims name it."""


def _claims_name_their_holder(connection: Connection) -> None:
    """Runs part 1 -> 2: ``rec_ask_claim`` gains ``holder`` and ``sent`` (unless made with them)."""
    inspector = inspect(connection)
    if not inspector.has_table("rec_ask_claim"):
        return  # created below, at version 2
    present = {column["name"] for column in inspector.get_columns("rec_ask_claim")}
    for column in ("holder", "sent"):
        if column not in present:
            connection.execute(text(f"ALTER TABLE rec_ask_claim ADD COLUMN {column} VARCHAR"))


MIGRATIONS[("runs", 1)] = _claims_name_their_holder


class ClaimState(StrEnum):
    """What :meth:`RunKeys.claim` found."""

    OURS = "ours"  # this caller forwards the call (a new claim, or one whose holder died before sending)
    TAKEN = "taken"  # a live caller has it
    IN_DOUBT = "in-doubt"  # its holder died after sending the call: this caller reports it, never resends


def key_digest(key: str) -> str:
    """How a run key is stored and journaled."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def sent_key(meta: Any) -> str | RunKeyRefusal | None:
    """The run key a call sent in its ``_meta``, a refusal for one that can't be a key, or None."""
    key = meta.get(RUN_KEY_META) if isinstance(meta, dict) else None
    if key is None:
        return None
    if not isinstance(key, str) or not RUN_KEY_SHAPE.fullmatch(key):
        return RunKeyRefusal(RunKeyCode.RUN_KEY_INVALID, "a run key is 8-200 letters, digits or ._~-", None)
    return key


class RunKeys:
    """Run keys, ask claims and idle closing in a :class:`RunStore`'s database."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        ensure_schema(store.engine, "runs", RUNS_SCHEMA, RUNS_TABLES)

    def issue(self, run: str, now: datetime) -> str:
        """A new key for ``run``, to hand to the agent."""
        key = "rk_" + secrets.token_urlsafe(24)
        self._bind(key, run, now)
        return key

    def find(self, key: str, agent: str, principal: str) -> str | RunKeyRefusal:
        """The open run ``key`` names for this agent and principal, or why not."""
        digest = key_digest(key)
        with Session(self.store.engine) as session:
            row = session.get(RecRunKey, digest)
            run_id = row.run if row is not None else None
        if run_id is None:
            return RunKeyRefusal(RunKeyCode.RUN_KEY_UNKNOWN, "no run has this key", digest)
        run = self.store.run(run_id)
        if (run.agent, run.principal) != (agent, principal):
            return RunKeyRefusal(
                RunKeyCode.RUN_KEY_NOT_YOURS, "this key names another agent's or principal's run", digest
            )
        if run.closed_at is not None:
            return RunKeyRefusal(RunKeyCode.RUN_CLOSED, f"the run closed at {run.closed_at}", digest)
        return run_id

    def open_or_find(self, key: str, agent: str, principal: str, now: datetime) -> str | RunKeyRefusal:
        """The run of a host-configured key; a key never seen before opens a new run under it, and
        one whose run closed names a new run that continues it (:meth:`find_or_continue`)."""
        found = self.find_or_continue(key, agent, principal, now)
        if not isinstance(found, RunKeyRefusal) or found.code != RunKeyCode.RUN_KEY_UNKNOWN:
            return found
        run = self.store.open_run(agent=agent, principal=principal).id
        try:
            self._bind(key, run, now)
        except IntegrityError:  # another process bound it first: theirs is the run
            self.store.close_run(run)
            return self.find(key, agent, principal)
        return run

    def find_or_continue(self, key: str, agent: str, principal: str, now: datetime) -> str | RunKeyRefusal:
        """The open run ``key`` names, or, if its run closed, a new run that continues it.

        A run closes when nobody called under its key for a while, or when its process ended with
        nothing to come back for; the key still names this agent's work, so a call that sends it
        back starts a new run under the same key rather than being refused. The new run's first
        entry is a ``note`` naming the closed run (the record reads as one story, in two runs).
        """
        for _ in range(3):  # another process may continue it at the same moment: theirs is the run
            found = self.find(key, agent, principal)
            if not isinstance(found, RunKeyRefusal) or found.code != RunKeyCode.RUN_CLOSED:
                return found
            with Session(self.store.engine) as session:
                row = session.get(RecRunKey, key_digest(key))
                closed = row.run if row is not None else None
            if closed is None:  # pragma: no cover - a found key's row stays
                return found
            continued = self._continue(key, closed, agent, principal, now)
            if continued is not None:
                return continued
        return found

    def _continue(self, key: str, closed: str, agent: str, principal: str, now: datetime) -> str | None:
        """Bind ``key`` to a new run continuing ``closed``; None if another process did it first."""
        run = self.store.open_run(agent=agent, principal=principal).id
        digest = key_digest(key)
        keyed = SQLModel.metadata.tables["rec_run_key"]
        with self.store.engine.begin() as connection:
            ours = (keyed.c.digest == digest) & (keyed.c.run == closed)
            moved = connection.execute(update(keyed).where(ours).values(run=run, seen_at=wire_time(now)))
        if not moved.rowcount:
            self.store.close_run(run)  # opened for nothing: closed empty, as a lost race always was
            return None
        closed_at = self.store.run(closed).closed_at
        body = HostNote(
            server=CONTINUED_NOTE[0],
            tool=CONTINUED_NOTE[1],
            arguments={"runKeyDigest": digest},
            outcome={"status": "ok", "continues": closed, "closedAt": closed_at},
        )
        self.store.append(run, "note", body.wire())
        return run

    def touch(self, key: str, now: datetime) -> None:
        """Note a call under ``key`` (keeps its run from closing as idle)."""
        with Session(self.store.engine) as session:
            row = session.get(RecRunKey, key_digest(key))
            if row is not None:
                row.seen_at = wire_time(now)
                session.add(row)
                session.commit()

    def claim(self, run: str, ask: str, now: datetime) -> ClaimState:
        """Take the approved ask ``run/ask`` for forwarding, or say who has it.

        A claim whose holder is dead (its process gone on this host, or ``CLAIM_TTL`` passed) is
        taken over: to forward the call if the holder never sent it, to report it if it did.
        """
        try:
            with Session(self.store.engine) as session:
                session.add(RecAskClaim(run=run, ask=ask, at=wire_time(now), holder=HOLDER))
                session.commit()
        except IntegrityError:
            return self._take_over(run, ask, now)
        return ClaimState.OURS

    def claim_sent(self, run: str, ask: str, now: datetime) -> bool:
        """Note that this process sends the call of its claim now; False if the claim is no longer its own."""
        with self.store.engine.begin() as connection:
            mine = (_CLAIMS.c.run == run) & (_CLAIMS.c.ask == ask) & (_CLAIMS.c.holder == HOLDER)
            return bool(connection.execute(update(_CLAIMS).where(mine).values(sent=wire_time(now))).rowcount)

    def claim_of(self, run: str, ask: str) -> RecAskClaim | None:
        """The claim on ``run/ask``, if any."""
        with Session(self.store.engine) as session:
            return session.get(RecAskClaim, (run, ask))

    def _take_over(self, run: str, ask: str, now: datetime) -> ClaimState:
        found = self.claim_of(run, ask)
        if found is None or not holder_dead(found, now):
            return ClaimState.TAKEN
        with self.store.engine.begin() as connection:
            theirs = (_CLAIMS.c.run == run) & (_CLAIMS.c.ask == ask) & (_CLAIMS.c.at == found.at)
            theirs &= _CLAIMS.c.holder.is_(None) if found.holder is None else _CLAIMS.c.holder == found.holder
            ours = {"holder": HOLDER, "at": wire_time(now)}
            if not connection.execute(update(_CLAIMS).where(theirs).values(ours)).rowcount:
                return ClaimState.TAKEN  # another caller took it over first
        # A claim made before claims said when they were sent may have been sent.
        return ClaimState.OURS if found.holder is not None and found.sent is None else ClaimState.IN_DOUBT

    def close_idle(self, now: datetime, idle: timedelta) -> list[str]:
        """Close (and sign) every open keyed run nobody called under its key for ``idle``."""
        with Session(self.store.engine) as session:
            rows = session.exec(select(RecRunKey).order_by(col(RecRunKey.run))).all()
            last: dict[str, datetime] = {}
            for row in rows:
                seen = parse_wire_time(row.seen_at)
                last[row.run] = max(seen, last.get(row.run, seen))
        closed = []
        for run_id, seen in last.items():
            if now - seen > idle and self.store.run(run_id).closed_at is None:
                self.store.close_run(run_id)
                closed.append(run_id)
        return closed

    def _bind(self, key: str, run: str, now: datetime) -> None:
        with Session(self.store.engine) as session:
            session.add(RecRunKey(digest=key_digest(key), run=run, seen_at=wire_time(now)))
            session.commit()


def holder_dead(claim: RecAskClaim, now: datetime) -> bool:
    """The claim's process is gone (known at once on its own host), or it claimed ``CLAIM_TTL`` ago."""
    if now - parse_wire_time(claim.at) > CLAIM_TTL:
        return True
    host, _, rest = (claim.holder or "").partition(":")
    pid = rest.partition(":")[0]
    return host == socket.gethostname() and pid.isdigit() and not process_alive(int(pid))


def stalled_approvals(store: RunStore, now: datetime) -> list[tuple[Ask, str]]:
    """Approved asks claimed by a Recorder that died before recording the call, with what is known of each."""
    keys, asks = RunKeys(store), Asks(store)
    found = []
    for run in store.runs():
        for ask in asks.all(run.id):
            claim = keys.claim_of(run.id, ask.entry.id) if ask.state == "approved" else None
            if claim is None or not holder_dead(claim, now):
                continue
            if claim.holder is not None and claim.sent is None:
                what = "the Recorder making it stopped before sending it; the agent's next call makes it"
            else:
                what = (
                    f"the Recorder making it sent it at {claim.sent or 'an unknown time'} and stopped before"
                    " its answer was recorded: whether it was made is unknown (in doubt);"
                    " the agent's next call is told so and it is never sent again"
                )
            found.append((ask, what))
    return found


@dataclass
class RunState:
    """What one Recorder process keeps about a run it serves."""

    key: str | None = None
    unsettled: set[str] = field(default_factory=set)  # asks not yet used or refused
    links: LinkIndex = field(default_factory=LinkIndex)
    touched: datetime | None = None
    joined: bool = False  # continued by a key: leave it open for its other callers
    continues: str | None = None  # the closed run this one continues under the same key (its retries count)


class RunSessions:
    """Which run each call of this Recorder goes to.

    A call that sends a key goes to that key's run; every other call to the process's own run:
    the host-configured key's run, or a new run that is issued a key with its first answer.
    """

    def __init__(self, store: RunStore, *, agent: str, principal: str, configured: str | None) -> None:
        self.store = store
        self.agent = agent
        self.principal = principal
        self.configured = configured
        self.keys = RunKeys(store)
        self.own: str | None = None
        self.own_refusal: RunKeyRefusal | None = None  # the configured key can't be used
        self.states: dict[str, RunState] = {}

    def open(self, now: datetime, idle: timedelta) -> None:
        """At the process's start: close runs left idle. Its own run opens at its first call
        (:meth:`own_run`), so a process that is never called leaves no empty run behind."""
        self.keys.close_idle(now, idle)

    def own_run(self, now: datetime) -> str:
        """This process's own run, opened (or continued, under the host's key) on first use."""
        if self.own is not None:
            return self.own
        if self.configured is not None:
            found = self.keys.open_or_find(self.configured, self.agent, self.principal, now)
            if not isinstance(found, RunKeyRefusal):
                self.own = found
                self._join(found, self.configured, now)
                return found
            self.own_refusal = found  # every call is refused with it, journaled in a run of its own
        self.own = self.store.open_run(agent=self.agent, principal=self.principal).id
        self.states[self.own] = RunState()
        return self.own

    def run_for(self, key: str | RunKeyRefusal | None, now: datetime) -> str | RunKeyRefusal:
        """The run a call with ``key`` (as :func:`sent_key` read it) goes to, or why it is refused."""
        if key is None:
            self.own_run(now)
            assert self.own is not None
            if self.own_refusal is not None:
                return self.own_refusal
            state = self.states[self.own]
            if state.key is None:
                state.key = self.keys.issue(self.own, now)
                state.touched = now
            elif self._stale(state, now) and not self._still_open(self.own, state.key, now):
                # Closed as idle by another process while this one sat unused: its key goes on, in the
                # run that continues it (as it would for any caller that sends the key back).
                found = self.keys.find_or_continue(state.key, self.agent, self.principal, now)
                if isinstance(found, RunKeyRefusal):
                    return found
                del self.states[self.own]
                self.own = found
                self._join(found, state.key, now)
                self.states[found].joined = state.joined
            return self.own
        if isinstance(key, RunKeyRefusal):
            return key
        known = next((run for run, state in self.states.items() if state.key == key), None)
        if (
            known is not None
            and self._stale(self.states[known], now)
            and not self._still_open(known, key, now)
        ):
            del self.states[known]  # closed as idle meanwhile: the key now goes to the run continuing it
            known = None
        if known is None:
            found = self.keys.find_or_continue(key, self.agent, self.principal, now)
            if isinstance(found, RunKeyRefusal):
                return found
            known = found
            self._join(found, key, now)
        self.states[known].joined = True
        return known

    def state(self, run: str) -> RunState:
        """The run's state in this process."""
        return self.states[run]

    def closing(self, pending: set[str]) -> str | None:
        """The run to close as the process ends, if any: its own, unless it is shared or has asks.

        ``pending`` are its asks still pending or approved: a caller may come back for them.
        """
        own = self.own
        if own is None or self.configured is not None:
            return None
        state = self.states.get(own)
        if state is not None and (state.joined or pending):
            return None
        return own

    @staticmethod
    def _stale(state: RunState, now: datetime) -> bool:
        return state.touched is None or now - state.touched > _TOUCH_EVERY

    def _still_open(self, run: str, key: str, now: datetime) -> bool:
        """Note a call under ``key``, at most every few seconds; False if ``run`` has closed."""
        if self.store.run(run).closed_at is not None:
            return False
        self.keys.touch(key, now)
        self.states[run].touched = now
        return True

    def _join(self, run: str, key: str, now: datetime) -> None:
        """Continue ``run`` here: what it wrote (for links) and its open asks, from its record."""
        self.keys.touch(key, now)
        state = RunState(key=key, joined=True, touched=now)
        try:
            entries = self.store.entries(run)
        except UnknownRun:  # pragma: no cover - a key's run always exists (foreign key)
            entries = []
        for entry in entries:
            if entry.kind == "call":
                state.links.add(entry.id, LinkedCall.of(entry.body))
            elif entry.kind == "note":
                note = read_as(NoteBody, entry)
                if isinstance(note, NoteBody) and (note.server, note.tool) == CONTINUED_NOTE:
                    state.continues = note.outcome.continues if note.outcome is not None else None
        state.unsettled = {
            a.entry.id for a in Asks(self.store).all(run) if a.state in ("pending", "approved")
        }
        self.states[run] = state
