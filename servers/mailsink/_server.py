"""The SMTP side of the sink: aiosmtpd in its own thread, delivering into a Maildir."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from typing import Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from ._dsn import ENVID_ATTRIBUTE, DsnSMTP
from ._maildir import DeliveredMessage, count_messages, deliver, ensure_maildir, read_maildir

# How often wait_for re-reads the Maildir when no delivery of ours wakes it (another process may
# deliver into the same directory); each wait is bounded by the caller's timeout.
_POLL_SECONDS = 0.05


class _Handler:
    """aiosmtpd handler: stores each message before answering 250, so 250 means stored; offers DSN
    (RFC 3461) so that a sender can give each message an envelope identifier (``_dsn.py``)."""

    def __init__(self, directory: Path, delivered: threading.Condition) -> None:
        self._directory = directory
        self._delivered = delivered

    async def handle_EHLO(
        self, server: SMTP, session: Session, envelope: Envelope, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname  # what aiosmtpd does itself when there is no hook
        return [*responses[:-1], "250-DSN", responses[-1]]

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        try:
            # File I/O with fsync blocks; keep the event loop free for other sessions.
            await asyncio.to_thread(
                deliver,
                self._directory,
                envelope.mail_from or "",
                list(envelope.rcpt_tos),
                data,
                getattr(envelope, ENVID_ATTRIBUTE, None),
            )
        except OSError as exc:
            return f"451 Requested action aborted: cannot store message ({exc.strerror})"
        with self._delivered:
            self._delivered.notify_all()
        return "250 Message accepted for delivery"


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
    sees them.
    """

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.directory = Path(directory)
        self.host = host
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
        controller = _Controller(
            _Handler(self.directory, self._delivered),
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
