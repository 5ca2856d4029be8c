"""The outbox's courier: delivers ``prepared`` notices and marks each one ``sent`` at once.

    python -m hatp_journal.servers.courier --store calendar.db --smtp-host 127.0.0.1 --smtp-port 25

A tool server in ``process`` mode (what ``serve`` uses) starts it with :class:`Dispatcher`, as a
process of its own session, so killing the server leaves it running; it exits once it has
delivered nothing for ``--idle-seconds`` (default 60), or as soon as the outbox is empty once the
server that started it (``--starter PID``) is gone. One courier per outbox at a time: it holds
the lease row ``outbox_courier`` in the store, and a lease whose holder died (``kill -9``) is taken
over by the next courier started. See :mod:`hatp_journal.servers.outbox` for what survives which
crash. The courier's own window runs from its final ``.`` (the server stores the message and
answers ``250``) to its ``sent`` mark, which is staged in an open transaction before the content
goes out and committed as the first thing after the ``250`` (crash points ``courier:delivered``,
the 250 read and the mark not committed, and ``courier:marked``). Every attempt at a notice sends
the same bytes (the same Message-ID), to a server that offers DSN the notice id as ``ENVID``, and
to one that offers CHECKPOINT (RFC 1845) the notice's transaction as ``TRANSID``, so that the next
courier's attempt after a kill in the window is a restart the server answers without a second copy.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Connection, Engine, RootTransaction, create_engine, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal._shared.crashpoints import crash_point
from hatp_journal._shared.mail import Envelope, MailDeliveryError, SmtpSession
from hatp_journal.servers.outbox_tables import FAILED, PREPARED, SENT, OutboxCourier, OutboxNotice
from hatp_journal.toolkit.store import configure_sqlite

__all__ = [
    "Deliverer",
    "Dispatcher",
    "SentMark",
    "lease_holder",
    "main",
    "pending",
    "release_lease",
    "run",
    "stop_courier",
    "take_lease",
]

LEASE = "courier"
IDLE_SECONDS = 60.0
"""A courier exits after delivering nothing for this long (the outbox empty, or the server down)."""
POLL_SECONDS = 0.05
"""How often a courier looks for new notices: a notice waits at most this long for its courier."""
BACKOFF_SECONDS = 1.0
"""After a failure that may pass (SMTP server down), before the next try."""
WATCH_SECONDS = 1.0
"""How often a server in ``process`` mode checks that waiting notices have a live courier."""
RESTART_SECONDS = 10.0
"""The watch starts a courier for waiting notices at most this often (after a commit, at once)."""


# -- the lease -----------------------------------------------------------------------------------


def _alive(host: str, pid: int) -> bool:
    if host != socket.gethostname():
        return True  # another machine's process: can't tell, so it holds
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    try:  # a killed child its parent has not reaped yet is a zombie: dead for us
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def lease_holder(engine: Engine) -> OutboxCourier | None:
    """The live process holding the outbox's lease, if any."""
    with Session(engine) as session:
        held = session.get(OutboxCourier, LEASE)
    return held if held is not None and _alive(held.host, held.pid) else None


def take_lease(engine: Engine, pid: int) -> bool:
    """Make ``pid`` (on this host) the outbox's courier unless another live process is; True if it is."""
    host = socket.gethostname()
    with Session(engine) as session:  # BEGIN IMMEDIATE on SQLite: read and write as one
        # A row lock elsewhere (PostgreSQL): two takers of a dead holder's lease take turns.
        held = session.get(OutboxCourier, LEASE, with_for_update=True)
        if held is not None:
            if (held.host, held.pid) == (host, pid):
                return True
            if _alive(held.host, held.pid):
                return False
            held.host, held.pid, held.since = host, pid, wire_time(utc_now())  # its holder died
            session.add(held)
        else:
            session.add(OutboxCourier(name=LEASE, host=host, pid=pid, since=wire_time(utc_now())))
        try:
            session.commit()
        except IntegrityError:
            return False  # another courier took it just now
    return True


def release_lease(engine: Engine, pid: int) -> None:
    """Give the lease up, if ``pid`` holds it."""
    with Session(engine) as session:
        held = session.get(OutboxCourier, LEASE)
        if held is not None and (held.host, held.pid) == (socket.gethostname(), pid):
            session.delete(held)
            session.commit()


def stop_courier(engine: Engine, *, wait_seconds: float = 30.0) -> int | None:
    """Stop the live courier of this outbox, if any (SIGTERM, then wait for it); returns its pid.

    For tests and operators: a courier also stops by itself once it has been idle a while.
    """
    held = lease_holder(engine)
    if held is None or held.host != socket.gethostname():
        return None
    os.kill(held.pid, signal.SIGTERM)
    gone_by = time.monotonic() + wait_seconds
    while _alive(held.host, held.pid) and time.monotonic() < gone_by:
        time.sleep(0.01)
    return held.pid


# -- delivering ----------------------------------------------------------------------------------


class SentMark:
    """A notice's ``sent`` mark (a :class:`~hatp_journal._shared.mail.DeliveryMark`): staged in an
    open transaction before the message goes out, committed the moment its ``250`` is read.

    On SQLite the staged mark holds the store's write lock while the server stores the message, so
    the commit after the ``250`` waits for nobody; :data:`~hatp_journal._shared.mail.
    MARK_HOLD_SECONDS` bounds that hold.
    """

    def __init__(self, engine: Engine, notice_id: str) -> None:
        self.engine = engine
        self.notice_id = notice_id
        self._connection: Connection | None = None
        self._transaction: RootTransaction | None = None

    def prepare(self) -> None:
        connection = self.engine.connect()
        try:
            transaction = connection.begin()  # BEGIN IMMEDIATE on SQLite: the lock taken now
            mark = update(OutboxNotice).where(col(OutboxNotice.id) == self.notice_id)
            connection.execute(mark.values(state=SENT, code=None, reason=None, sent_at=wire_time(utc_now())))
        except BaseException:
            connection.close()
            raise
        self._connection, self._transaction = connection, transaction

    def commit(self) -> None:
        # The window where a kill resends (same Message-ID, same ENVID): the 250 read, not marked.
        crash_point("courier:delivered")
        assert self._transaction is not None, "prepare() first"
        try:
            self._transaction.commit()
        finally:
            self._close()

    def abandon(self) -> None:
        if self._transaction is not None:
            try:
                self._transaction.rollback()
            finally:
                self._close()

    def _close(self) -> None:
        connection, self._connection, self._transaction = self._connection, None, None
        if connection is not None:
            connection.close()


class Deliverer:
    """Sends the outbox's ``prepared`` notices, oldest first, marking each in the step that reads
    its ``250`` (see :class:`SentMark`)."""

    def __init__(self, engine: Engine, host: str, port: int, timeout: float = 10.0) -> None:
        self.engine = engine
        self.host, self.port, self.timeout = host, port, timeout
        self._marks = _quick_commits(engine)
        self._reads = _plain_reads(engine)
        self.leases = self._marks  # operational state: a lease lost to a power cut is just taken again

    def pending(self) -> list[OutboxNotice]:
        """The notices not sent yet, oldest first."""
        return pending(self._reads)

    def deliver(self, smtp: SmtpSession) -> tuple[list[str], bool]:
        """One pass over the waiting notices: (ids sent, whether a failure that may pass stopped it).

        The caller must hold the lease.
        """
        sent: list[str] = []
        for row in self.pending():
            envelope = Envelope(
                row.sender,
                tuple(row.recipients()),
                row.data,
                tuple(json.loads(row.options_json)),
                envelope_id=row.id,  # the same on every attempt: ENVID and TRANSID tell a resend
            )
            # Counted before the send: a courier killed after the 250 and before its mark leaves
            # the attempt counted, so a notice sent twice shows two attempts, not one.
            self._count_attempt(row.id)
            try:
                smtp.send(envelope, SentMark(self._marks, row.id))
            except MailDeliveryError as error:
                self._mark(row.id, error)
                if error.temporary:
                    return sent, True
                continue
            if not smtp.marked:  # the server took longer than the mark may hold the lock
                crash_point("courier:delivered")
                self._mark(row.id, None)
            crash_point("courier:marked")
            sent.append(row.id)
        return sent, False

    def deliver_under_lease(self) -> list[str]:
        """One pass in this process, under the lease (nothing if a live courier holds it)."""
        pid = os.getpid()
        if not take_lease(self.leases, pid):
            return []
        smtp = SmtpSession(self.host, self.port, self.timeout)
        try:
            sent, _ = self.deliver(smtp)
        finally:
            smtp.close()
            release_lease(self.leases, pid)
        return sent

    def _count_attempt(self, notice_id: str) -> None:
        """One more attempt at ``notice_id``, in one quick commit, before it is sent."""
        with Session(self._marks) as session:
            row = session.get(OutboxNotice, notice_id)
            if row is not None:
                row.attempts += 1
                session.add(row)
                session.commit()

    def _mark(self, notice_id: str, error: MailDeliveryError | None) -> None:
        """One attempt's outcome in one quick commit: sent (None), failed for good, or kept prepared."""
        with Session(self._marks) as session:
            row = session.get(OutboxNotice, notice_id)
            if row is None:
                return
            if error is None:
                row.state, row.code, row.reason, row.sent_at = SENT, None, None, wire_time(utc_now())
            else:
                row.state = PREPARED if error.temporary else FAILED
                row.code, row.reason = error.code, error.reason
            session.add(row)
            session.commit()


def pending(engine: Engine) -> list[OutboxNotice]:
    """The outbox's notices not sent yet (``prepared``), oldest first."""
    with Session(engine) as session:
        query = select(OutboxNotice).where(col(OutboxNotice.state) == PREPARED)
        return list(session.exec(query.order_by(col(OutboxNotice.created_at), col(OutboxNotice.id))))


def _plain_reads(engine: Engine) -> Engine:
    """An engine on the same SQLite file for the polls: plain reads, which in WAL mode take no lock
    (the store's own engine begins every transaction IMMEDIATE, taking the write lock)."""
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return engine
    return create_engine(engine.url)


def _quick_commits(engine: Engine) -> Engine:
    """An engine on the same SQLite file whose commits skip the fsync (WAL, ``synchronous=NORMAL``).

    For the ``sent`` marks only: the resend window ends when the mark commits, and an fsync is most
    of that time. A commit without it survives the process being killed (the WAL is written); only
    a power loss can take the last marks back, and then those notices are resent with their
    Message-IDs. The notices themselves commit with the change, fully synced.
    """
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return engine  # another database, or one a second engine would not share
    quick = create_engine(engine.url)
    configure_sqlite(quick, synchronous="NORMAL")
    return quick


def run(
    engine: Engine,
    host: str,
    port: int,
    *,
    timeout: float = 10.0,
    idle_seconds: float = IDLE_SECONDS,
    poll_seconds: float = POLL_SECONDS,
    starter: int | None = None,
) -> int:
    """Deliver until nothing was delivered for ``idle_seconds``, or until the outbox is empty once
    the ``starter`` process (the server that started it) is gone; 0 at once if another courier runs."""
    pid = os.getpid()
    deliverer = Deliverer(engine, host, port, timeout)
    if not take_lease(deliverer.leases, pid):
        return 0
    smtp = SmtpSession(host, port, timeout)
    quiet_since = time.monotonic()
    try:
        while True:
            seen = {row.id for row in deliverer.pending()}
            sent, blocked = deliverer.deliver(smtp)
            now = time.monotonic()
            if sent:
                quiet_since = now
                continue
            smtp.close()  # nothing to send now: hold no connection while waiting
            orphaned = starter is not None and not blocked and not _alive(socket.gethostname(), starter)
            if orphaned or now - quiet_since >= idle_seconds:
                release_lease(deliverer.leases, pid)
                # A server that saw the lease held just before the release started no courier:
                # its notice, committed before the release, is new here.
                new = {row.id for row in deliverer.pending()} - seen
                if not new or not take_lease(deliverer.leases, pid):
                    return 0
                quiet_since = now
            time.sleep(BACKOFF_SECONDS if blocked else poll_seconds)
    finally:
        smtp.close()
        release_lease(deliverer.leases, pid)


# -- starting couriers ---------------------------------------------------------------------------


class Dispatcher:
    """A tool server's side: starts a courier process when notices wait and no live courier holds
    the lease, and reaps the couriers it started."""

    def __init__(self, engine: Engine, host: str, port: int, timeout: float = 10.0) -> None:
        self.engine = engine
        self.host, self.port, self.timeout = host, port, timeout
        self._lock = threading.Lock()
        self._children: list[subprocess.Popen[bytes]] = []
        self._started_at = -RESTART_SECONDS
        self._reads = _plain_reads(engine)
        self._stop = threading.Event()

    def command(self) -> list[str]:
        """The courier's command line for this outbox."""
        store = self.engine.url.render_as_string(hide_password=False)
        smtp = ["--smtp-host", self.host, "--smtp-port", str(self.port), "--timeout", str(self.timeout)]
        starter = ["--starter", str(os.getpid())]
        return [sys.executable, "-m", "hatp_journal.servers.courier", "--store", store, *smtp, *starter]

    def wait_for(self, notice_ids: Sequence[str], seconds: float) -> bool:
        """Wait until none of ``notice_ids`` is ``prepared`` (True), or ``seconds`` pass (False)."""
        given_up = time.monotonic() + seconds
        wanted = set(notice_ids)
        while any(row.id in wanted for row in pending(self._reads)):
            if time.monotonic() >= given_up:
                return False
            if lease_holder(self._reads) is None:
                self.ensure_courier()  # the courier died (killed) or gave up: another one
            time.sleep(POLL_SECONDS / 2)
        return True

    def ensure_courier(self) -> None:
        """Start a courier unless a live one holds the lease (it will find the new notices)."""
        with self._lock:
            self._children = [child for child in self._children if child.poll() is None]
            if lease_holder(self._reads) is not None:
                return
            child = subprocess.Popen(  # a session of its own: a kill of this server leaves it alone
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self._children.append(child)
            self._started_at = time.monotonic()
            take_lease(self.engine, child.pid)  # so the lease names it before it has even started

    def watch(self) -> None:
        """Check now, then every :data:`WATCH_SECONDS` in a daemon thread, that waiting notices
        have a live courier (a killed courier's notices are otherwise left until the next call)."""
        self._check()
        threading.Thread(target=self._watch, name="outbox-courier-watch", daemon=True).start()

    def stop(self) -> None:
        """Stop watching (the couriers started go on until they are idle)."""
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_SECONDS):
            try:
                self._check()
            except Exception:  # noqa: BLE001 - a store hiccup must not end the watch; next round
                continue

    def _check(self) -> None:
        # At most one start per RESTART_SECONDS from here: with the SMTP server down, a courier
        # gives up after IDLE_SECONDS and the next one should not follow at once.
        if time.monotonic() - self._started_at >= RESTART_SECONDS and pending(self._reads):
            self.ensure_courier()


def main(argv: Sequence[str] | None = None) -> int:
    """Run a courier for one outbox (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m hatp_journal.servers.courier", description=__doc__)
    parser.add_argument("--store", required=True, help="the tool server's store (a SQLite file or URL)")
    parser.add_argument("--smtp-host", default="127.0.0.1")
    parser.add_argument("--smtp-port", type=int, default=25)
    parser.add_argument("--timeout", type=float, default=10.0, help="SMTP timeout in seconds")
    parser.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS)
    parser.add_argument("--starter", type=int, help="the server's pid: once it is gone, exit when idle")
    args = parser.parse_args(argv)
    from hatp_journal.toolkit.store import create_store_engine

    engine = create_store_engine(args.store)
    try:
        return run(
            engine,
            args.smtp_host,
            args.smtp_port,
            timeout=args.timeout,
            idle_seconds=args.idle_seconds,
            starter=args.starter,
        )
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
