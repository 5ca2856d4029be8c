"""A durable outbox: mail written in the same transaction as the change, sent after the commit.

Each notice is a row in the server's own store, committed with the change it announces, with a
stable Message-ID (``<ntc_…@domain>``, set on the message) and the exact bytes that go on the wire.
:meth:`Outbox.stage` (or :meth:`Batch.stage`) runs inside the tool's transaction and goes through
SMTP up to the content (MAIL, RCPT, DATA), so a refused address or a server that can't carry the
message fails the call while it can still roll back; the final ``.`` is sent only after the commit,
then the row is marked ``sent``. The notices of one :class:`Batch` (a call's messages, one per
attendee) get their ``.`` together and are marked in one write. What that gives, crash by crash:

- before the commit: the SMTP transaction is never finished, so the server discards it; no row,
  no mail;
- after the commit, before the ``.``: the row is ``prepared``; :meth:`Outbox.flush` (run when the
  server starts and after every call that sends mail) sends it, same bytes, same Message-ID;
- between sending the ``.`` and the ``sent`` mark: the one window where a notice can be sent
  twice, with the same Message-ID (and, for iTIP, the same bytes and SEQUENCE, which a calendar
  applies once), so a receiver can recognise the second copy. A server that got the ``.`` may
  store the message though we died, or drop it because we vanished before its ``250`` (the
  aiosmtpd sink drops about half of them): without a ``250`` the only safe move is SMTP's own,
  to send again. Marking first instead loses every notice such a server drops. No sender can
  close the window (the duplicate-message problem of RFC 1047): SMTP has no way to ask whether a
  message whose answer was lost arrived. It lasts the server's storing (an fsync before its
  ``250``) plus one quick commit of ours.

So each notice is sent at most once outside that window, and none is lost. A notice the server
refuses for good at the ``.`` (a 5xx) is marked ``failed`` with its code; a 4xx or a lost
connection leaves it ``prepared`` for the next flush. One server process per store is assumed.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr

from sqlalchemy import Engine, LargeBinary, create_engine
from sqlmodel import Column, Field, Session, SQLModel, col, select

from hatp_journal.servers.crashpoints import crash_point
from hatp_journal.servers.smtp import Envelope, MailDeliveryError, OpenDelivery, open_delivery, send_envelope
from hatp_journal.toolkit import Tx, utc_now, wire_time
from hatp_journal.toolkit.store import configure_sqlite

__all__ = ["FAILED", "PREPARED", "SENT", "Batch", "Outbox", "OutboxNotice", "Staged", "notices_about"]

PREPARED = "prepared"
SENT = "sent"
FAILED = "failed"


class OutboxNotice(SQLModel, table=True):
    """One message to send: its stable Message-ID, the exact bytes, and whether it went out."""

    __tablename__ = "outbox_notice"

    id: str = Field(primary_key=True)
    message_id: str = Field(unique=True)
    kind: str  # what it is, for people: "invitation", "cancellation notice", "email"
    about: str = Field(index=True)  # the resource it announces
    sender: str
    recipients_json: str  # the recipients the SMTP server accepted
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    options_json: str
    state: str = PREPARED
    code: str | None = None
    reason: str | None = None
    attempts: int = 0
    created_at: str
    sent_at: str | None = None

    def recipients(self) -> list[str]:
        """Who the notice goes to."""
        found: list[str] = json.loads(self.recipients_json)
        return found

    def view(self) -> dict[str, object]:
        """The notice as tools and the command line show it (without its bytes)."""
        return {
            "id": self.id,
            "messageId": self.message_id,
            "kind": self.kind,
            "about": self.about,
            "to": self.recipients(),
            "state": self.state,
            "code": self.code,
            "attempts": self.attempts,
            "sentAt": self.sent_at,
        }


@dataclass(frozen=True)
class Staged:
    """A notice written to the outbox: sent once the transaction commits."""

    id: str
    message_id: str
    to: tuple[str, ...]
    refused: dict[str, tuple[int, bytes]]


class Outbox:
    """Stages notices in a tool's transaction and delivers them after its commit, through one SMTP server."""

    def __init__(self, engine: Engine, host: str, port: int, timeout: float = 10.0) -> None:
        self.engine = engine
        self.host = host
        self.port = port
        self.timeout = timeout
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()  # staged in a transaction of this process, not yet finished
        self._marks = _quick_commits(engine)

    def batch(self, tx: Tx) -> Batch:
        """A batch of notices staged in ``tx`` and released together after its commit."""
        return Batch(self, tx)

    def stage(self, tx: Tx, message: EmailMessage, *, kind: str, about: str) -> Staged:
        """Stage one message in ``tx``, in a batch of its own (see :meth:`Batch.stage`)."""
        return self.batch(tx).stage(message, kind=kind, about=about)

    def flush(self) -> list[str]:
        """Send every ``prepared`` notice no call of this process is finishing; returns their ids.

        Stops at the first one that fails for a reason that may pass (the server down): the rest
        stay ``prepared`` for the next flush.
        """
        sent: list[str] = []
        with self._lock:
            with Session(self.engine) as session:
                query = select(OutboxNotice).where(col(OutboxNotice.state) == PREPARED)
                waiting = [row for row in session.exec(query.order_by(col(OutboxNotice.created_at)))]
                waiting = [row for row in waiting if row.id not in self._in_flight]
            for row in waiting:
                envelope = Envelope(
                    row.sender, tuple(row.recipients()), row.data, tuple(json.loads(row.options_json))
                )
                self._count_attempt(row.id)
                try:
                    send_envelope(envelope, self.host, self.port, self.timeout)
                except MailDeliveryError as error:
                    self._mark({row.id: error})
                    if error.temporary:
                        break
                    continue
                crash_point("outbox:delivered")
                self._mark({row.id: None})
                crash_point("outbox:marked")
                sent.append(row.id)
        return sent

    def pending(self) -> list[OutboxNotice]:
        """The notices not sent yet (``prepared``), oldest first."""
        with Session(self.engine) as session:
            query = select(OutboxNotice).where(col(OutboxNotice.state) == PREPARED)
            return list(session.exec(query.order_by(col(OutboxNotice.created_at))))

    def _release(self, staged: list[tuple[str, OpenDelivery]]) -> None:
        """After the commit: end every SMTP transaction of the batch, then mark them all at once."""
        crash_point("outbox:committed")
        try:
            for _, delivery in staged:
                delivery.end()  # all the "."s first, so the servers store them side by side
            outcomes: dict[str, MailDeliveryError | None] = {}
            for notice_id, delivery in staged:
                try:
                    delivery.answer()
                    outcomes[notice_id] = None
                except MailDeliveryError as error:
                    outcomes[notice_id] = error
            # The window where a crash resends: from the first "." sent to this one mark.
            crash_point("outbox:delivered")
            self._mark(outcomes)
            crash_point("outbox:marked")
        finally:
            for _, delivery in staged:
                delivery.close()
            with self._lock:
                self._in_flight.difference_update(notice_id for notice_id, _ in staged)
        if self.pending():
            self.flush()  # what an earlier crash or a dropped connection left behind

    def _drop(self, staged: list[tuple[str, OpenDelivery]]) -> None:
        for _, delivery in staged:
            delivery.abort()
        with self._lock:
            self._in_flight.difference_update(notice_id for notice_id, _ in staged)

    def _count_attempt(self, notice_id: str) -> None:
        with Session(self._marks) as session:
            row = session.get(OutboxNotice, notice_id)
            if row is not None:
                row.attempts += 1
                session.add(row)
                session.commit()

    def _mark(self, outcomes: dict[str, MailDeliveryError | None]) -> None:
        """Record each notice's outcome in one commit: sent (None), failed for good, or kept prepared."""
        with Session(self._marks) as session:
            for notice_id, error in outcomes.items():
                row = session.get(OutboxNotice, notice_id)
                if row is None:
                    continue
                if error is None:
                    row.state, row.code, row.reason, row.sent_at = SENT, None, None, wire_time(utc_now())
                else:
                    # A 4xx or a lost connection may pass: the notice stays prepared, the reason noted.
                    row.state = PREPARED if error.temporary else FAILED
                    row.code, row.reason = error.code, error.reason
                session.add(row)
            session.commit()


class Batch:
    """Notices staged in one transaction: each one's SMTP transaction waits, content sent, for the
    commit; then all are released together and marked in one quick write."""

    def __init__(self, outbox: Outbox, tx: Tx) -> None:
        self._outbox = outbox
        self._tx = tx
        self._staged: list[tuple[str, OpenDelivery]] = []

    def stage(self, message: EmailMessage, *, kind: str, about: str) -> Staged:
        """Write ``message`` to the outbox in the transaction; its final ``.`` goes after the commit.

        Sets the message's Message-ID. Raises :class:`MailDeliveryError` (nothing staged) if the
        server can't be reached, refuses the message, or refuses every recipient.
        """
        outbox, tx = self._outbox, self._tx
        notice_id = f"ntc_{secrets.token_hex(10)}"
        domain = parseaddr(str(message["From"]))[1].rpartition("@")[2] or "localhost"
        del message["Message-ID"]
        message["Message-ID"] = f"<{notice_id}@{domain}>"
        delivery = open_delivery(message, outbox.host, outbox.port, outbox.timeout)
        envelope = delivery.envelope
        tx.session.add(
            OutboxNotice(
                id=notice_id,
                message_id=str(message["Message-ID"]),
                kind=kind,
                about=about,
                sender=envelope.sender,
                recipients_json=json.dumps(list(envelope.recipients)),
                data=envelope.data,
                options_json=json.dumps(list(envelope.options)),
                attempts=1,
                created_at=wire_time(tx.now),
            )
        )
        with outbox._lock:
            outbox._in_flight.add(notice_id)
        if not self._staged:
            staged = self._staged
            tx.after_commit(lambda: outbox._release(staged))
            tx.after_rollback(lambda: outbox._drop(staged))
        self._staged.append((notice_id, delivery))
        crash_point("outbox:staged")
        return Staged(notice_id, str(message["Message-ID"]), envelope.recipients, delivery.refused)


def _quick_commits(engine: Engine) -> Engine:
    """An engine on the same SQLite file whose commits skip the fsync (WAL, ``synchronous=NORMAL``).

    For the outbox's own marks only: the resend window ends when the ``sent`` mark commits, and an
    fsync is most of that time. A commit without it survives the process being killed (the WAL is
    written); only a power loss can take the last marks back, and then those notices are resent
    with their Message-IDs. The notices themselves commit with the change, fully synced.
    """
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return engine  # another database, or one a second engine would not share
    quick = create_engine(engine.url)
    configure_sqlite(quick, synchronous="NORMAL")
    return quick


def notices_about(session: Session, about: str) -> list[OutboxNotice]:
    """The notices of one resource, oldest first."""
    query = select(OutboxNotice).where(col(OutboxNotice.about) == about)
    return list(session.exec(query.order_by(col(OutboxNotice.created_at), col(OutboxNotice.id))))
