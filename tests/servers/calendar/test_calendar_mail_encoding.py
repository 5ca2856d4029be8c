"""Invitations whose text or addresses are not plain ASCII lines, mailed through real SMTP servers.

Every received message is read back with parsers we did not write: Python's email parser for the
mail, icalendar for the calendar part.
"""

from __future__ import annotations

import re
from email.message import EmailMessage
from typing import Any

import pytest
from icalendar import Calendar

from hatp_journal.servers.smtp import SmtpUtf8NotOfferedError, send_message

pytestmark = pytest.mark.anyio

ZOE = "zoë@globex.com"


def calendar_part(message: EmailMessage) -> tuple[str, Any]:
    """The METHOD and the VEVENT of the message's text/calendar part, as icalendar reads them."""
    [part] = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
    calendar = Calendar.from_ical(part.get_content())
    [event] = calendar.events
    return str(calendar["METHOD"]), event


def header_lines(raw: bytes) -> list[bytes]:
    """The raw header lines of a message and of each of its MIME parts, folding undone."""
    unfolded = re.sub(rb"\r\n[ \t]", b" ", raw)
    return [line for block in re.split(rb"\r\n\r\n", unfolded) for line in block.split(b"\r\n")]


# -- 8-bit text and servers with and without 8BITMIME ---------------------------------------------


async def test_without_8bitmime_every_byte_sent_is_ascii_and_the_invitation_still_reads_back(
    smtp_server, calendar_on
):
    server = smtp_server(eight_bit_mime=False)
    async with calendar_on(server) as calendar:
        created = await calendar.create(summary="Réunion — Zoë", attendees=["buyer@globex.com"])

    [received] = server.accepted
    parts = [part for part in received.message.walk() if not part.is_multipart()]
    assert not created.failed
    assert received.raw.isascii()
    assert "BODY=8BITMIME" not in received.mail_options
    assert [part["Content-Transfer-Encoding"] for part in parts] == ["quoted-printable"] * 2
    assert str(calendar_part(received.message)[1]["SUMMARY"]) == "Réunion — Zoë"
    assert "You are invited: Réunion — Zoë" in parts[0].get_content()
    assert received.message["Subject"].startswith("Invitation: Réunion — Zoë @ ")
    [subject] = [line for line in header_lines(received.raw) if line.startswith(b"Subject:")]
    assert b"=?utf-8?" in subject  # an RFC 2047 encoded word


async def test_with_8bitmime_the_invitation_goes_as_declared_8bit_and_reads_back(smtp_server, calendar_on):
    server = smtp_server()
    async with calendar_on(server) as calendar:
        await calendar.create(summary="Réunion — Zoë", attendees=["buyer@globex.com"])

    [received] = server.accepted
    parts = [part for part in received.message.walk() if not part.is_multipart()]
    assert "BODY=8BITMIME" in received.mail_options
    assert [part["Content-Transfer-Encoding"] for part in parts] == ["8bit"] * 2
    assert str(calendar_part(received.message)[1]["SUMMARY"]) == "Réunion — Zoë"
    assert all(line.isascii() for line in header_lines(received.raw)[:8])  # the top headers
    assert received.message["Subject"].startswith("Invitation: Réunion — Zoë @ ")


# -- the shared sender, directly --------------------------------------------------------------------


def test_an_8bit_attachment_goes_as_base64_to_a_server_without_8bitmime(smtp_server):
    server = smtp_server(eight_bit_mime=False)
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "dana@acme.com", "buyer@globex.com", "Q3"
    message.set_content("Numbers attached.\n")
    message.add_attachment(b"\x00\xff\xc3\xab\r\n", "application", "octet-stream", cte="8bit")

    send_message(message, server.host, server.port)

    [received] = server.accepted
    [_, attachment] = received.message.iter_parts()
    assert received.raw.isascii()
    assert attachment["Content-Transfer-Encoding"] == "base64"
    assert attachment.get_content() == b"\x00\xff\xc3\xab\r\n"
    assert message.get_payload()[1]["Content-Transfer-Encoding"] == "8bit"  # the caller's is unchanged


def test_a_non_ascii_recipient_on_a_server_without_smtputf8_is_refused_before_anything_is_sent(smtp_server):
    server = smtp_server(smtputf8=False)
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "dana@acme.com", ZOE, "Q3"
    message.set_content("Hello\n")

    with pytest.raises(SmtpUtf8NotOfferedError) as refused:
        send_message(message, server.host, server.port)

    assert refused.value.code == "SMTPUTF8_NOT_OFFERED"
    assert server.accepted == []
