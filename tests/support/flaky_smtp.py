"""A real SMTP server (aiosmtpd on loopback) that turns the first N messages away with a 451.

Every message it accepts is kept whole; ``refusals=None`` turns every message away for ever.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session


class FlakySmtp:
    """The handler: answers ``451`` to DATA ``refusals`` times, then ``250`` and keeps the message."""

    def __init__(self, refusals: int | None) -> None:
        self.refusals = refusals
        self.refused = 0
        self.accepted: list[EmailMessage] = []
        self.port = 0
        self._lock = threading.Lock()

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        with self._lock:
            if self.refusals is None or self.refused < self.refusals:
                self.refused += 1
                return "451 4.3.0 Try again later"
            message = email.message_from_bytes(envelope.original_content or b"", policy=email.policy.default)
            assert isinstance(message, EmailMessage)
            self.accepted.append(message)
        return "250 Message accepted for delivery"


class _AnyPortController(Controller):
    # aiosmtpd 1.4.6 can't bind port 0 by itself (see hatp_journal.servers.mailsink._server).
    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self._bind()

    async def _bind(self) -> asyncio.AbstractServer:
        server = await self.loop.create_server(self._factory_invoker, host=self.hostname, port=0)
        self.port = server.sockets[0].getsockname()[1]
        return server


@contextmanager
def flaky_smtp(refusals: int | None) -> Iterator[FlakySmtp]:
    """Serve a :class:`FlakySmtp` on a free loopback port while the block runs."""
    handler = FlakySmtp(refusals)
    controller = _AnyPortController(handler, hostname="127.0.0.1", port=0)
    controller.start()
    handler.port = int(controller.port)
    try:
        yield handler
    finally:
        controller.stop()
