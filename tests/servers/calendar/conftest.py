"""Makes the shipped ``mail_sink`` fixture available here: the CANCEL goes through real SMTP.

Also: the calendar server in memory behind a real MCP client (``calendar``, or ``calendar_on`` a
server of the test's choice), and real SMTP servers that refuse chosen recipients
(``refusing_smtp``, for half-delivered invitations) or offer chosen extensions (``smtp_server``:
with or without 8BITMIME and SMTPUTF8), keeping the exact bytes they received.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from fastmcp import Client
from icalendar import Calendar

from hatp_journal.servers.calendar import build
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink
from hatp_journal.toolkit import Journal, SigningKey
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import META_KEY

__all__ = [
    "calendar",
    "calendar_on",
    "closed_port",
    "itip",
    "kickoff",
    "mail_sink",
    "refusing_smtp",
    "smtp_server",
]

KICKOFF = {
    "summary": "Kickoff with Globex",
    "start": "2026-11-04T15:00:00Z",
    "end": "2026-11-04T16:00:00Z",
    "attendees": ["buyer@globex.com", "dana@acme.com"],
}


class Answer:
    """A tool result as the tests read it: error flag, our ``_meta`` object, structured content."""

    def __init__(self, result: Any) -> None:
        self.failed = bool(result.is_error)
        self.meta: dict[str, Any] = (result.meta or {}).get(META_KEY, {})
        self.content: dict[str, Any] = result.structured_content or {}

    @property
    def error(self) -> dict[str, Any]:
        """The error body (code, message, data) of an error result."""
        error: dict[str, Any] = self.meta["error"]
        return error


class CalendarUnderTest:
    """The calendar server in memory, with its client, journal, clock and mail at hand."""

    def __init__(
        self, client: Client[Any], journal: Journal, clock: FakeClock, smtp: MailSink | LoopbackSmtp
    ) -> None:
        self.client, self.journal, self.clock, self.smtp = client, journal, clock, smtp

    async def call(self, tool: str, **arguments: Any) -> Answer:
        """Call a tool through the real MCP client."""
        return Answer(await self.client.call_tool_mcp(tool, arguments))

    async def create(self, **changes: Any) -> Answer:
        """``create_event`` with the kickoff's arguments, changed as told."""
        return await self.call("create_event", **{**KICKOFF, **changes})

    async def undo(self, journal: dict[str, Any], **extra: Any) -> Answer:
        """``hatp_journal_compensate`` a call, expecting the version it left unless told otherwise."""
        arguments = {"token": journal["compensationToken"], "ifVersion": journal["effect"]["version"]}
        return await self.call("hatp_journal_compensate", **{**arguments, **extra})

    async def event(self, uid: str) -> dict[str, Any]:
        """``get_event``'s answer."""
        return (await self.call("get_event", uid=uid)).content

    async def events(self) -> list[dict[str, Any]]:
        """``list_events``' answer."""
        events: list[dict[str, Any]] = (await self.call("list_events")).content["events"]
        return events


def vevent(ics: str) -> Any:
    """The single VEVENT of an iTIP text, parsed with icalendar, with the METHOD beside it."""
    calendar = Calendar.from_ical(ics)
    [event] = calendar.events
    return str(calendar["METHOD"]), event


@pytest.fixture
def kickoff() -> dict[str, Any]:
    """The arguments of D-881's kickoff meeting."""
    return dict(KICKOFF)


@pytest.fixture
def itip() -> Any:
    """``itip(ics) -> (METHOD, VEVENT)``, parsed with icalendar."""
    return vevent


@pytest.fixture
async def calendar(tmp_path: Path, mail_sink: MailSink) -> AsyncIterator[CalendarUnderTest]:
    """The calendar in memory, mailing into the sink, on a clock that moves only when told."""
    clock = FakeClock()
    mcp, journal = build(
        tmp_path / "calendar.db", SigningKey.generate(), mail_sink.host, mail_sink.port, clock
    )
    async with Client(mcp) as client:
        yield CalendarUnderTest(client, journal, clock, mail_sink)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound once to get a free number, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass(frozen=True)
class Received:
    """One message a :class:`LoopbackSmtp` accepted: envelope, MAIL FROM options, DATA as sent."""

    recipients: tuple[str, ...]
    mail_options: tuple[str, ...]
    raw: bytes
    message: email.message.EmailMessage


class LoopbackSmtp:
    """A real SMTP server on loopback that answers 550 to the recipients in :attr:`refuse`.

    Unlike aiosmtpd's default it offers SMTPUTF8 only if told to; it offers 8BITMIME unless told
    not to. Accepted messages are kept in :attr:`accepted`, with the exact bytes of their DATA.
    """

    host = "127.0.0.1"

    def __init__(self, *, eight_bit_mime: bool = True) -> None:
        self.eight_bit_mime = eight_bit_mime
        self.refuse: set[str] = set()
        self.accepted: list[Received] = []
        self.port = 0

    async def handle_EHLO(
        self, server: SMTP, session: Session, envelope: Envelope, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname
        if self.eight_bit_mime:
            return responses
        return [line for line in responses if line != "250-8BITMIME"]

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address in self.refuse:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        # With SMTPUTF8, headers are UTF-8 (RFC 6532); the bytes parser would read them as ASCII.
        if envelope.smtp_utf8:
            message = email.message_from_string(raw.decode("utf-8"), policy=email.policy.default)
        else:
            message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, email.message.EmailMessage)
        options = tuple(envelope.mail_options)
        self.accepted.append(Received(tuple(envelope.rcpt_tos), options, raw, message))
        return "250 OK"

    def to(self, address: str) -> list[Received]:
        """The messages ``address`` received, in order."""
        return [received for received in self.accepted if address in received.recipients]

    def methods_to(self, address: str) -> list[str]:
        """The iTIP METHOD of each message ``address`` received, in order."""
        return [
            vevent(part.get_content())[0]
            for received in self.to(address)
            for part in received.message.walk()
            if part.get_content_type() == "text/calendar"
        ]


class _AnyPortController(Controller):
    # aiosmtpd 1.4.6 can't bind port 0 by itself (see hatp_journal.servers.mailsink._server).
    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self._bind()

    async def _bind(self) -> asyncio.AbstractServer:
        server = await self.loop.create_server(self._factory_invoker, host=self.hostname, port=0)
        self.port = server.sockets[0].getsockname()[1]
        return server


@pytest.fixture
def smtp_server() -> Iterator[Callable[..., LoopbackSmtp]]:
    """``smtp_server(eight_bit_mime=True, smtputf8=False)``: start a :class:`LoopbackSmtp`."""
    controllers: list[Controller] = []

    def start(*, eight_bit_mime: bool = True, smtputf8: bool = False) -> LoopbackSmtp:
        handler = LoopbackSmtp(eight_bit_mime=eight_bit_mime)
        controller = _AnyPortController(handler, hostname=handler.host, port=0, enable_SMTPUTF8=smtputf8)
        controller.start()
        controllers.append(controller)
        handler.port = int(controller.port)
        return handler

    try:
        yield start
    finally:
        for controller in controllers:
            controller.stop()


@pytest.fixture
def refusing_smtp(smtp_server: Callable[..., LoopbackSmtp]) -> LoopbackSmtp:
    """A running :class:`LoopbackSmtp` (8BITMIME, no SMTPUTF8) on a free loopback port."""
    return smtp_server()


@pytest.fixture
def calendar_on(tmp_path: Path) -> Callable[[LoopbackSmtp], AbstractAsyncContextManager[CalendarUnderTest]]:
    """``async with calendar_on(server) as calendar``: the calendar in memory, mailing through ``server``."""

    @asynccontextmanager
    async def serve(server: LoopbackSmtp) -> AsyncIterator[CalendarUnderTest]:
        clock = FakeClock()
        mcp, journal = build(tmp_path / "calendar.db", SigningKey.generate(), server.host, server.port, clock)
        async with Client(mcp) as client:
            yield CalendarUnderTest(client, journal, clock, server)

    return serve
