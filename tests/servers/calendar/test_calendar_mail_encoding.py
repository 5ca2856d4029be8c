"""Invitations whose text or addresses are not plain ASCII lines, mailed through real SMTP servers.

Every received message is read back with parsers we did not write: Python's email parser for the
mail, icalendar for the calendar part.
"""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote

import pytest
from icalendar import Calendar

from hatp_journal.servers.smtp import SmtpUtf8NotOfferedError, send_message

pytestmark = pytest.mark.anyio

ZOE = "zoë@globex.com"
# Characters RFC 3986 allows in a URI; "%" only as the start of a percent-encoded octet.
URI = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-F]{2})+")


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


# -- line breaks in the summary -------------------------------------------------------------------


async def test_a_summary_with_a_line_break_is_created_and_mailed_with_the_break_kept_in_the_invitation(
    calendar, kickoff
):
    created = await calendar.create(summary="Kickoff with Globex\nBring the Q3 numbers")

    delivered = calendar.smtp.wait_for(2)
    assert not created.failed
    assert created.content["summary"] == "Kickoff with Globex\nBring the Q3 numbers"
    for mail in delivered:
        message = email.message_from_bytes(mail.raw, policy=email.policy.default)
        method, event = calendar_part(message)
        assert (method, str(event["SUMMARY"])) == ("REQUEST", "Kickoff with Globex\nBring the Q3 numbers")
        assert message["Subject"].startswith("Invitation: Kickoff with Globex Bring the Q3 numbers @ ")
        assert all("\n" not in value and "\r" not in value for value in message.values())


async def test_undoing_an_event_with_a_line_break_in_its_summary_mails_the_cancellation_with_the_break(
    calendar, kickoff
):
    created = await calendar.create(summary="Kickoff\r\nwith Globex")

    undone = await calendar.undo(created.meta)

    cancels = calendar.smtp.wait_for(4)[2:]
    assert undone.meta["status"] == "done"
    assert created.content["summary"] == "Kickoff\nwith Globex"  # CR LF is read as a line break
    for mail in cancels:
        message = email.message_from_bytes(mail.raw, policy=email.policy.default)
        method, event = calendar_part(message)
        assert (method, str(event["SUMMARY"]), str(event["STATUS"])) == (
            "CANCEL",
            "Kickoff\nwith Globex",
            "CANCELLED",
        )
        assert message["Subject"].startswith("Cancelled: Kickoff with Globex @ ")


async def test_a_summary_with_a_control_character_is_refused_naming_the_summary_and_nothing_is_mailed(
    calendar,
):
    refused = await calendar.create(summary="Kickoff\x00with Globex")

    assert refused.failed
    assert refused.error["code"] == "TOOL_FAILED"
    assert (refused.error["data"]["field"], refused.error["data"]["cause"]) == ("summary", "INVALID_EVENT")
    assert calendar.smtp.messages() == []
    assert await calendar.events() == []


# -- a non-ASCII attendee -------------------------------------------------------------------------


async def test_a_non_ascii_attendee_is_a_percent_encoded_uri_and_gets_the_invitation_over_smtputf8(
    smtp_server, calendar_on
):
    server = smtp_server(smtputf8=True)
    async with calendar_on(server) as calendar:
        created = await calendar.create(attendees=["buyer@globex.com", ZOE])

    [received] = server.to(ZOE)
    _, event = calendar_part(received.message)
    uris = [str(attendee) for attendee in event.attendees]
    assert not created.failed
    assert created.content["attendees"] == ["buyer@globex.com", ZOE]
    assert uris == ["mailto:buyer@globex.com", "mailto:zo%C3%AB@globex.com"]
    assert all(URI.fullmatch(uri) for uri in [*uris, str(event["ORGANIZER"])])
    assert [unquote(uri.removeprefix("mailto:")) for uri in uris] == ["buyer@globex.com", ZOE]
    assert received.recipients == (ZOE,)
    assert "SMTPUTF8" in received.mail_options
    assert received.message["To"].addresses[0].addr_spec == ZOE


async def test_undoing_an_event_with_a_non_ascii_attendee_cancels_it_for_the_same_people(
    smtp_server, calendar_on
):
    server = smtp_server(smtputf8=True)
    async with calendar_on(server) as calendar:
        created = await calendar.create(attendees=["buyer@globex.com", ZOE])
        undone = await calendar.undo(created.meta)

    assert undone.meta["status"] == "done"
    assert undone.meta["sideEffects"] == [f"cancellation notice sent to buyer@globex.com, {ZOE}"]
    assert server.methods_to(ZOE) == ["REQUEST", "CANCEL"]
    assert server.methods_to("buyer@globex.com") == ["REQUEST", "CANCEL"]
    [_, cancel] = server.to(ZOE)
    assert [str(a) for a in calendar_part(cancel.message)[1].attendees] == [
        "mailto:buyer@globex.com",
        "mailto:zo%C3%AB@globex.com",
    ]


async def test_a_non_ascii_attendee_on_a_server_without_smtputf8_fails_with_its_code_and_stores_nothing(
    smtp_server, calendar_on
):
    server = smtp_server(smtputf8=False)
    async with calendar_on(server) as calendar:
        refused = await calendar.create(attendees=["buyer@globex.com", ZOE])
        events = await calendar.events()

    data = refused.error["data"]
    assert refused.failed
    assert (refused.error["code"], data["cause"]) == ("TOOL_FAILED", "SMTPUTF8_NOT_OFFERED")
    assert list(data["undelivered"]) == [ZOE]
    # The invitation staged for the buyer was dropped unsent with the rollback: nobody got anything.
    assert server.accepted == []
    assert events == []


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
