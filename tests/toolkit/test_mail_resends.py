"""What makes a resend rare and recognisable: a delivery mark staged before the message and
committed on its 250 (abandoned otherwise), and an envelope identifier (RFC 3461 ENVID) that goes to
a server offering DSN and only there, checked before anything is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Session
from aiosmtpd.smtp import Envelope as AiosmtpdEnvelope
from support.flaky_smtp import flaky_smtp

from hatp_journal._shared.mail import Envelope, MailDeliveryError, SmtpSession, envelope_id_allowed, probe
from hatp_journal.servers.mailsink._dsn import PENDING_TRANSID, DsnSMTP
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink

__all__ = ["mail_sink"]


def _message() -> EmailMessage:
    message = EmailMessage()
    message["From"] = "sales-bot@acme.com"
    message["To"] = "buyer@globex.com"
    message["Subject"] = "Kickoff"
    message["Message-ID"] = "<ntc_1@acme.com>"
    message.set_content("Hello.\n")
    return message


def _with_id(envelope: Envelope, envelope_id: str) -> Envelope:
    return Envelope(envelope.sender, envelope.recipients, envelope.data, envelope.options, envelope_id)


def test_a_server_without_dsn_gets_the_message_without_an_envid_rather_than_refusing_it() -> None:
    with flaky_smtp(refusals=0) as server:  # aiosmtpd as it comes: no DSN, 555 for an ENVID
        envelope, _ = probe(_message(), "127.0.0.1", server.port)
        session = SmtpSession("127.0.0.1", server.port)
        try:
            session.send(_with_id(envelope, "ntc_1"))
        finally:
            session.close()

    assert [str(m["Message-ID"]) for m in server.accepted] == ["<ntc_1@acme.com>"]


def test_a_server_that_offers_dsn_gets_the_envid_with_mail_from(mail_sink) -> None:
    envelope, _ = probe(_message(), mail_sink.host, mail_sink.port)
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        session.send(_with_id(envelope, "ntc_1"))
    finally:
        session.close()

    assert [m.envelope_id for m in mail_sink.wait_for(1)] == ["ntc_1"]


@pytest.mark.parametrize(
    "envelope_id",
    ["", "a b", "a=b", "a+b", "ntc_\n1", "zoë", "x" * 101],
    ids=["empty", "space", "equals", "plus", "line-break", "not-ascii", "too-long"],
)
def test_an_envelope_id_that_is_not_plain_xtext_is_refused_before_anything_is_sent(envelope_id: str) -> None:
    assert not envelope_id_allowed(envelope_id)
    with pytest.raises(ValueError, match="not an envelope identifier"):
        Envelope(
            "sales-bot@acme.com", ("buyer@globex.com",), b"Subject: x\r\n\r\nHello.\r\n", (), envelope_id
        )


def test_a_notice_id_is_a_plain_envelope_id() -> None:
    assert envelope_id_allowed("ntc_" + "0123456789abcdef0123")
    assert envelope_id_allowed("x" * 100)


class _RecordingMark:
    """A delivery mark that records what the session asked of it; ``refuse`` makes staging fail."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.calls: list[str] = []

    def prepare(self) -> None:
        self.calls.append("prepare")
        if self.refuse:
            raise RuntimeError("the store is unavailable")

    def commit(self) -> None:
        self.calls.append("commit")

    def abandon(self) -> None:
        self.calls.append("abandon")


def test_a_mark_is_committed_on_the_250_and_abandoned_on_a_refusal() -> None:
    with flaky_smtp(refusals=1) as server:
        envelope, _ = probe(_message(), "127.0.0.1", server.port)
        refused, accepted = _RecordingMark(), _RecordingMark()
        session = SmtpSession("127.0.0.1", server.port)
        try:
            with pytest.raises(MailDeliveryError):
                session.send(envelope, refused)
            marked_after_refusal = session.marked
            session.send(envelope, accepted)
        finally:
            session.close()

    assert (refused.calls, marked_after_refusal) == (["prepare", "abandon"], False)
    assert (accepted.calls, session.marked) == (["prepare", "commit"], True)
    assert len(server.accepted) == 1


def test_a_mark_that_cannot_be_staged_sends_nothing_and_the_next_message_still_goes_out() -> None:
    with flaky_smtp(refusals=0) as server:
        envelope, _ = probe(_message(), "127.0.0.1", server.port)
        failing = _RecordingMark(refuse=True)
        session = SmtpSession("127.0.0.1", server.port)
        try:
            with pytest.raises(RuntimeError, match="store is unavailable"):
                session.send(envelope, failing)
            nothing_yet = list(server.accepted)
            session.send(envelope)
        finally:
            session.close()

    assert failing.calls == ["prepare"]
    assert nothing_yet == []  # the half-sent DATA was cut off, never ended with its "."
    assert [str(m["Message-ID"]) for m in server.accepted] == ["<ntc_1@acme.com>"]


class _HangsUpAtTheEnd:
    """Takes the whole message, then drops the connection instead of answering the final "."."""

    async def handle_DATA(self, server: SMTP, session: Session, envelope: AiosmtpdEnvelope) -> str:
        assert server.transport is not None
        server.transport.close()
        return "250 OK"  # never reaches the sender


class _AnyPort(Controller):
    # aiosmtpd 1.4.6 can't bind port 0 by itself (see hatp_journal.servers.mailsink._server).
    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self._bind()

    async def _bind(self) -> asyncio.AbstractServer:
        server = await self.loop.create_server(self._factory_invoker, host=self.hostname, port=0)
        self.port = server.sockets[0].getsockname()[1]
        return server


def test_a_connection_lost_before_the_final_reply_abandons_the_mark_and_may_be_tried_again() -> None:
    controller = _AnyPort(_HangsUpAtTheEnd(), hostname="127.0.0.1", port=0)
    controller.start()
    try:
        envelope, _ = probe(_message(), "127.0.0.1", int(controller.port))
        mark = _RecordingMark()
        session = SmtpSession("127.0.0.1", int(controller.port))
        try:
            with pytest.raises(MailDeliveryError) as lost:
                session.send(envelope, mark)
        finally:
            session.close()
    finally:
        controller.stop()

    assert mark.calls == ["prepare", "abandon"]
    assert (lost.value.temporary, session.marked) == (True, False)


def test_to_a_server_offering_checkpoint_a_second_send_of_one_envelope_is_a_restart_and_stores_one_copy(
    mail_sink,
) -> None:
    envelope = _with_id(probe(_message(), mail_sink.host, mail_sink.port)[0], "ntc_1")
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        session.send(envelope)
        first = session.restarted
        mark = _RecordingMark()
        session.send(envelope, mark)  # as the next courier would, after a kill before its mark
    finally:
        session.close()

    assert (first, session.restarted) == (False, True)
    assert (mark.calls, session.marked) == (["prepare", "commit"], True)  # the restart's 250 marks it
    assert [m.message_id for m in mail_sink.messages()] == ["<ntc_1@acme.com>"]


class _HoldsPartOfIt:
    """Offers CHECKPOINT and claims to hold the first 10 octets of any transaction named to it."""

    def __init__(self) -> None:
        self.restarts = True  # the sink's SMTP session then takes TRANSID out of MAIL
        self.mails: list[str | None] = []
        self.stored: list[bytes] = []

    async def handle_EHLO(
        self, server: SMTP, session: Session, envelope: AiosmtpdEnvelope, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname
        return [*responses[:-1], "250-DSN", "250-CHECKPOINT", responses[-1]]

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: AiosmtpdEnvelope, address: str, options: list[str]
    ) -> str:
        transid = getattr(server, PENDING_TRANSID)
        self.mails.append(transid)
        envelope.mail_from = address
        return "355 10 is the transaction offset" if transid else "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: AiosmtpdEnvelope) -> str:
        self.stored.append(envelope.original_content or b"")
        return "250 OK"


class _SinkSession(_AnyPort):
    def factory(self) -> SMTP:
        return DsnSMTP(self.handler)


def test_a_355_for_part_of_a_message_starts_a_new_transaction_that_sends_all_of_it() -> None:
    handler = _HoldsPartOfIt()
    controller = _SinkSession(handler, hostname="127.0.0.1", port=0)
    controller.start()
    try:
        envelope = _with_id(probe(_message(), "127.0.0.1", int(controller.port))[0], "ntc_1")
        handler.mails.clear()  # the probe's MAIL
        session = SmtpSession("127.0.0.1", int(controller.port))
        try:
            session.send(envelope)
        finally:
            session.close()
    finally:
        controller.stop()

    assert str(handler.mails[0]).startswith("<ntc_1@")
    assert handler.mails[1:] == [None]  # after RSET, MAIL again without the TRANSID
    assert handler.stored == [envelope.data]
    assert not session.restarted


def test_an_envelope_id_that_cannot_name_a_transaction_goes_without_a_transid(mail_sink) -> None:
    # "@" is fine in an ENVID (xtext) but not in a TRANSID's local part (RFC 1845).
    envelope = _with_id(probe(_message(), mail_sink.host, mail_sink.port)[0], "ntc@1")
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        session.send(envelope)
        session.send(envelope)
    finally:
        session.close()

    assert [m.envelope_id for m in mail_sink.messages()] == ["ntc@1", "ntc@1"]
    assert not session.restarted
