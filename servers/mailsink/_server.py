"""The SMTP side of the sink: aiosmtpd in its own thread, delivering into a Maildir."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from typing import Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from ._checkpoint import RESTART_ATTRIBUTE, TRANSID_ATTRIBUTE, RestartIndex, Transaction
from ._dsn import ENVID_ATTRIBUTE, PENDING_TRANSID, DsnSMTP
from ._maildir import (
    ENVELOPE_TRANSID,
    DeliveredMessage,
    count_messages,
    deliver,
    ensure_maildir,
    read_maildir,
    sink_headers,
)

log = logging.getLogger("hatp_journal.mailsink")
"""One line per restart recognised (``hatp-mailsink serve`` prints them): the copy not stored."""

# How often wait_for re-reads the Maildir when no delivery of ours wakes it (another process may
# deliver into the same directory); each wait is bounded by the caller's timeout.
_POLL_SECONDS = 0.05


class _Handler:
    """aiosmtpd handler: stores each message before answering 250, so 250 means stored; offers DSN
    (RFC 3461) so that a sender can give each message an envelope identifier (``_dsn.py``), and,
    with ``restarts``, CHECKPOINT (RFC 1845) so that a sender's restart of a transaction whose
    message is stored already stores nothing (``_checkpoint.py``)."""

    def __init__(
        self, directory: Path, delivered: threading.Condition, restarts: RestartIndex | None
    ) -> None:
        self._directory = directory
        self._delivered = delivered
        self.restarts = restarts

    async def handle_EHLO(
        self, server: SMTP, session: Session, envelope: Envelope, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname  # what aiosmtpd does itself when there is no hook
        offered = ["250-DSN", *(["250-CHECKPOINT"] if self.restarts is not None else [])]
        return [*responses[:-1], *offered, responses[-1]]

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, mail_options: list[str]
    ) -> str:
        envelope.mail_from = address  # what aiosmtpd does itself when there is no hook
        envelope.mail_options.extend(mail_options)
        transid = getattr(server, PENDING_TRANSID, None)
        if transid is None or self.restarts is None or session.host_name is None:
            return "250 OK"
        transaction = Transaction(session.host_name, transid)
        storing = self.restarts.being_stored(transaction)
        if storing is not None:  # another session is storing it now: its outcome decides the answer
            await asyncio.to_thread(storing.wait)
        setattr(envelope, TRANSID_ATTRIBUTE, transaction)
        length = self.restarts.stored_length(transaction)
        if length is None:
            return "250 OK"
        setattr(envelope, RESTART_ATTRIBUTE, length)
        log.info("restarted %s from %s: stored already, no second copy", transid, session.host_name)
        return f"355 {length} is the transaction offset"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        if getattr(envelope, RESTART_ATTRIBUTE, None) is not None:
            if data:
                return "554 5.5.0 The message is stored in full already: send only the final '.'"
            return "250 2.0.0 Stored already: this transaction's message was stored before"
        try:
            # File I/O with fsync blocks; keep the event loop free for other sessions. The thread
            # also ends the transaction's claim, so a session cancelled meanwhile leaves none behind.
            stored = await asyncio.to_thread(
                self._store, envelope, data, getattr(envelope, TRANSID_ATTRIBUTE, None)
            )
        except OSError as exc:
            return f"451 Requested action aborted: cannot store message ({exc.strerror})"
        with self._delivered:
            self._delivered.notify_all()
        if not stored:
            transaction = getattr(envelope, TRANSID_ATTRIBUTE)
            log.info(
                "sent again %s from %s: stored already, no second copy",
                transaction.transid,
                transaction.client,
            )
            return "250 2.0.0 Stored already: this transaction's message was stored before"
        return "250 Message accepted for delivery"

    def _store(self, envelope: Envelope, data: bytes, transaction: Transaction | None) -> bool:
        """Store the message unless its transaction's message is stored already; True if stored."""
        restarts = self.restarts if transaction is not None else None  # a transaction is claimed
        if restarts is not None and transaction is not None:
            while (storing := restarts.claim(transaction)) is not None:
                storing.wait()
                if restarts.stored_length(transaction) is not None:
                    return False
        stored: int | None = None
        try:
            deliver(
                self._directory,
                envelope.mail_from or "",
                list(envelope.rcpt_tos),
                data,
                getattr(envelope, ENVID_ATTRIBUTE, None),
                transaction.header_value(len(data)) if transaction is not None else None,
            )
            stored = len(data)
        finally:
            if restarts is not None and transaction is not None:
                restarts.finish(transaction, stored)
        return True


class _Controller(Controller):
    """aiosmtpd's threaded controller, able to bind port 0 and report the port it got.

    aiosmtpd 1.4.6 (pinned) connects to ``self.port`` after binding to check that the server
    answers, which fails for port 0, so we record the bound port before that check runs.
    """

    def factory(self) -> SMTP:
        return DsnSMTP(self.handler, **self.SMTP_kwargs)

    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self._bind()

    async def _bind(self) -> asyncio.AbstractServer:
        server = await self.loop.create_server(
            self._factory_invoker, host=self.hostname, port=self.port, ssl=self.ssl_context
        )
        self.port = server.sockets[0].getsockname()[1]
        return server


class MailSink:
    """A real SMTP server on loopback that stores every delivered message in a Maildir.

    ``port=0`` picks a free port; read :attr:`port` after :meth:`start`. Messages stay in the
    Maildir after :meth:`stop`, so a new sink (or :func:`read_maildir`) on the same directory
    sees them. With ``checkpoint`` (the default) it offers CHECKPOINT (RFC 1845): a sender that
    restarts a transaction whose message it stored gets no second copy stored (``_checkpoint.py``);
    without it, it answers as most servers do, and a resend is a second copy.
    """

    def __init__(
        self, directory: Path, host: str = "127.0.0.1", port: int = 0, *, checkpoint: bool = True
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.checkpoint = checkpoint
        self._requested_port = port
        self._delivered = threading.Condition()
        self._controller: _Controller | None = None

    @property
    def port(self) -> int:
        """The port the server listens on; only known once started."""
        if self._controller is None:
            raise RuntimeError("the mail sink is not running: call start() first")
        return int(self._controller.port)

    @property
    def running(self) -> bool:
        """Whether the SMTP server is listening."""
        return self._controller is not None

    def start(self) -> Self:
        """Create the Maildir if needed and start listening. Returns the sink."""
        if self._controller is not None:
            raise RuntimeError("the mail sink is already running")
        ensure_maildir(self.directory)
        restarts = _restarts_stored_in(self.directory) if self.checkpoint else None
        controller = _Controller(
            _Handler(self.directory, self._delivered, restarts),
            hostname=self.host,
            port=self._requested_port,
        )
        controller.start()
        self._controller = controller
        return self

    def stop(self) -> None:
        """Stop listening. Does nothing if not running; stored messages stay."""
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def messages(self) -> list[DeliveredMessage]:
        """Every message in the Maildir, in delivery order."""
        return read_maildir(self.directory)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[DeliveredMessage]:
        """Wait until the Maildir holds at least ``count`` messages and return all of them.

        Raises ``TimeoutError`` saying how many arrived if ``timeout`` seconds pass first.
        """
        deadline = time.monotonic() + timeout
        with self._delivered:
            while (arrived := count_messages(self.directory)) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"expected {count} message(s) in {self.directory} within {timeout}s, "
                        f"but {arrived} arrived"
                    )
                self._delivered.wait(min(remaining, _POLL_SECONDS))
        return self.messages()


def _restarts_stored_in(directory: Path) -> RestartIndex:
    """The index of the transactions whose messages the Maildir holds, from their trace headers."""
    stored = []
    for headers in sink_headers(directory):
        kept = Transaction.from_header(headers.get(ENVELOPE_TRANSID.lower(), ""))
        if kept is not None:
            stored.append(kept)
    return RestartIndex(stored)
