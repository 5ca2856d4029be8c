"""A durable outbox: mail written in the same transaction as the change, delivered by a courier.

Each notice is a row in the server's own store, committed with the change it announces, with a
stable Message-ID (``<ntc_…@domain>``, set on the message) and the exact bytes that go on the wire.
:meth:`Outbox.stage` (or :meth:`Batch.stage`) runs inside the tool's transaction: it asks the SMTP
server whether it would take the message (EHLO, MAIL, RCPT, then RSET: :func:`~hatp_journal.
toolkit.mail.probe`), so a refused address or a server that can't carry the message fails the call
while it can still roll back, and stores the message as it would go on the wire. Nothing is sent
then. After the commit the tool server never speaks SMTP about the notice again: a courier
(:mod:`hatp_journal.servers.courier`) delivers ``prepared`` rows and marks each ``sent`` right
after the server's ``250``. What that gives, crash by crash:

- a tool server killed before its commit: no row, no mail (the probe sent nothing);
- killed after its commit, at any point: the row is ``prepared`` and the courier (a process of its
  own, which the server's kill leaves alone, or the next one started) delivers it once;
- the courier killed between its final ``.`` and its ``sent`` mark: the one window where a notice
  can be sent again. Against a server that offers CHECKPOINT (RFC 1845; ``hatp-mailsink`` does,
  few others) the courier names each notice's transaction (``TRANSID=<notice-id@its-EHLO-name>``),
  the same on every attempt, so the next courier's attempt is a restart: the server answers it
  holds the whole message, the courier sends only the final ``.``, and no second copy is stored.
  Against any other server the notice is sent again, with the same Message-ID (and, for iTIP, the
  same bytes and SEQUENCE, which a calendar applies once) and, to a server that offers DSN, the same
  envelope identifier (``ENVID``, the notice id), so a receiver can collapse the copies: plain SMTP
  can't ask whether a message whose answer was lost arrived (the duplicate-message problem of RFC
  1047), and marking before the ``.`` instead loses the messages a server drops when its sender
  vanishes. The window lasts from the final ``.`` through the server's storing and its ``250`` to
  one commit: the mark is staged in an open transaction before the message goes out and committed
  (no fsync) the moment the ``250`` is read, so nothing, not even the store's write lock, is waited
  for in between (:class:`~hatp_journal.servers.courier.SentMark`). What remains is the receiving
  server's time to store the message and answer; ``bench/courier_window.py`` times it, and
  ``bench/courier_kills.py`` counts copies with and without CHECKPOINT.

Who delivers (``courier``): ``"process"`` (what ``serve`` uses) starts a courier process of its own
session after a commit and whenever ``prepared`` rows wait with no live courier, and the call
answers once the courier has marked its notices (or after ``timeout`` seconds); ``"inline"`` (the
default of an in-process ``build``, for tests and embedding) delivers in this process right after
the commit, with the old window: a kill of this process between a ``250`` and its mark. Either way
one lease in the store (:class:`OutboxCourier`) lets one deliverer at a time send.

A notice the server refuses for good at the ``.`` (a 5xx) is marked ``failed`` with its code; a
4xx or a lost connection leaves it ``prepared`` for the next pass.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from hatp_journal._shared.crashpoints import crash_point
from hatp_journal._shared.mail import probe
from hatp_journal.servers.courier import Deliverer, Dispatcher
from hatp_journal.servers.outbox_tables import FAILED, PREPARED, SENT, OutboxCourier, OutboxNotice
from hatp_journal.toolkit import Tx
from hatp_journal.toolkit.wire import wire_time

__all__ = [
    "COURIERS",
    "FAILED",
    "INLINE",
    "PREPARED",
    "PROCESS",
    "SENT",
    "Batch",
    "Outbox",
    "OutboxCourier",
    "OutboxNotice",
    "Staged",
    "notices_about",
]

INLINE = "inline"
PROCESS = "process"
COURIERS = (INLINE, PROCESS)


@dataclass(frozen=True)
class Staged:
    """A notice written to the outbox: delivered once the transaction commits."""

    id: str
    message_id: str
    to: tuple[str, ...]
    refused: dict[str, tuple[int, bytes]]


class Outbox:
    """Stages notices in a tool's transaction; after its commit, has a courier deliver them."""

    def __init__(
        self, engine: Engine, host: str, port: int, timeout: float = 10.0, *, courier: str = INLINE
    ) -> None:
        if courier not in COURIERS:
            raise ValueError(f"courier must be one of {', '.join(COURIERS)}, not {courier!r}")
        self.engine = engine
        self.host = host
        self.port = port
        self.timeout = timeout
        self.courier = courier
        self._deliverer = Deliverer(engine, host, port, timeout)
        self._inline = threading.Lock()  # one inline pass at a time: the lease is per process
        self._dispatcher = Dispatcher(engine, host, port, timeout) if courier == PROCESS else None

    def batch(self, tx: Tx) -> Batch:
        """A batch of notices staged in ``tx``, handed to the courier together after its commit."""
        return Batch(self, tx)

    def stage(self, tx: Tx, message: EmailMessage, *, kind: str, about: str) -> Staged:
        """Stage one message in ``tx``, in a batch of its own (see :meth:`Batch.stage`)."""
        return self.batch(tx).stage(message, kind=kind, about=about)

    def start(self) -> None:
        """At the server's start: get what a crash left ``prepared`` delivered (and, with a courier
        process, keep watching for notices no live courier is delivering)."""
        if self._dispatcher is not None:
            self._dispatcher.watch()
        elif self.pending():
            self.flush()

    def flush(self) -> list[str]:
        """Deliver every ``prepared`` notice in this process now, under the lease; returns their ids.

        Sends nothing if a live courier holds the lease (it is delivering them). Stops at the first
        failure that may pass (the server down): the rest stay ``prepared`` for the next pass.
        """
        with self._inline:
            return self._deliverer.deliver_under_lease()

    def pending(self) -> list[OutboxNotice]:
        """The notices not sent yet (``prepared``), oldest first."""
        return self._deliverer.pending()

    def _committed(self, notice_ids: list[str]) -> None:
        crash_point("outbox:committed")
        if self._dispatcher is not None:
            self._dispatcher.ensure_courier()
            crash_point("outbox:courier-started")
            # The call answers once its notices went out, as inline, unless that takes too long:
            # then the courier finishes on its own. Waiting reads the store, it sends nothing.
            self._dispatcher.wait_for(notice_ids, self.timeout)
        else:
            self.flush()


class Batch:
    """Notices staged in one transaction, handed to the courier together after the commit."""

    def __init__(self, outbox: Outbox, tx: Tx) -> None:
        self._outbox = outbox
        self._tx = tx
        self._staged: list[str] = []

    def stage(self, message: EmailMessage, *, kind: str, about: str) -> Staged:
        """Write ``message`` to the outbox in the transaction; it is delivered after the commit.

        Sets the message's Message-ID. Raises :class:`~hatp_journal._shared.mail.MailDeliveryError`
        (nothing staged) if the server can't be reached, refuses the sender, or every recipient.
        """
        outbox, tx = self._outbox, self._tx
        notice_id = f"ntc_{secrets.token_hex(10)}"
        domain = parseaddr(str(message["From"]))[1].rpartition("@")[2] or "localhost"
        del message["Message-ID"]
        message["Message-ID"] = f"<{notice_id}@{domain}>"
        envelope, refused = probe(message, outbox.host, outbox.port, outbox.timeout)
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
                created_at=wire_time(tx.now),
            )
        )
        if not self._staged:
            staged = self._staged
            tx.after_commit(lambda: outbox._committed(staged))
        self._staged.append(notice_id)
        crash_point("outbox:staged")
        return Staged(notice_id, str(message["Message-ID"]), envelope.recipients, refused)


def notices_about(session: Session, about: str) -> list[OutboxNotice]:
    """The notices of one resource, oldest first."""
    query = select(OutboxNotice).where(col(OutboxNotice.about) == about)
    return list(session.exec(query.order_by(col(OutboxNotice.created_at), col(OutboxNotice.id))))
