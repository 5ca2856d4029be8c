"""The sink tells a resend: it offers DSN and keeps a sender's ENVID (RFC 3461) with the message,
refuses malformed DSN parameters, and reports each Message-ID a recipient got more than once."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

import pytest

from hatp_journal._shared.mail import Envelope, SmtpSession, probe
from hatp_journal.servers.mailsink import DeliveredMessage, MailSink, Resend, resent
from hatp_journal.servers.mailsink.cli import main


def _email(subject: str, message_id: str, to: str = "buyer@globex.com", **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "sales-bot@acme.com"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = message_id
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content("Hello.\n")
    return message


def test_the_sink_offers_dsn_and_keeps_the_envelope_id_exactly_as_the_sender_gave_it(mail_sink):
    with smtplib.SMTP(mail_sink.host, mail_sink.port, timeout=10) as client:
        client.ehlo()
        offered = client.has_extn("dsn")
        client.sendmail(
            "sales-bot@acme.com",
            ["buyer@globex.com"],
            _email("Kickoff", "<ntc_1@acme.com>").as_bytes(),
            mail_options=["ENVID=ntc_Ab+2B1", "RET=HDRS"],
            rcpt_options=["NOTIFY=SUCCESS,FAILURE", "ORCPT=rfc822;buyer@globex.com"],
        )

    [delivered] = mail_sink.wait_for(1)
    assert offered
    assert delivered.envelope_id == "ntc_Ab+2B1"  # case and xtext kept: aiosmtpd would upper-case it
    assert delivered.message_id == "<ntc_1@acme.com>"
    assert delivered.envelope_to == ("buyer@globex.com",)


@pytest.mark.parametrize(
    ("command", "argument"),
    [
        ("mail", "ENVID=a=b"),
        ("mail", "ENVID=" + "x" * 101),
        ("mail", "ENVID=a+zz"),
        ("mail", "ENVID=a ENVID=b"),
        ("mail", "RET=NONE"),
        ("rcpt", "NOTIFY=SOMETIMES"),
        ("rcpt", "NOTIFY=NEVER,SUCCESS"),
        ("rcpt", "ORCPT=buyer@globex.com"),
    ],
    ids=[
        "envid-equals",
        "envid-too-long",
        "envid-bad-escape",
        "envid-twice",
        "ret",
        "notify",
        "notify-never-and-more",
        "orcpt-no-type",
    ],
)
def test_a_malformed_dsn_parameter_is_refused_with_501_and_nothing_is_stored(mail_sink, command, argument):
    with smtplib.SMTP(mail_sink.host, mail_sink.port, timeout=10) as client:
        client.ehlo()
        if command == "mail":
            code, reply = client.mail("sales-bot@acme.com", argument.split())
        else:
            assert client.mail("sales-bot@acme.com")[0] == 250
            code, reply = client.rcpt("buyer@globex.com", argument.split())

    assert (code, reply.split()[0]) == (501, b"5.5.4")
    assert mail_sink.messages() == []


def test_an_envelope_id_header_inside_the_message_is_never_taken_for_the_senders_envid(mail_sink):
    forged = _email("Forged", "<ntc_2@acme.com>", X_Envelope_Id="ntc_forged")
    envelope, _ = probe(forged, mail_sink.host, mail_sink.port)
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        session.send(envelope)  # no ENVID given
        session.send(Envelope(envelope.sender, envelope.recipients, envelope.data, envelope.options, "ntc_2"))
    finally:
        session.close()

    assert [m.envelope_id for m in mail_sink.wait_for(2)] == [None, "ntc_2"]


def test_a_message_id_a_recipient_got_twice_is_reported_as_resent_with_its_envelope_ids(tmp_path, capsys):
    # Without CHECKPOINT, as most servers: the second send of one ENVID is a second copy.
    with MailSink(tmp_path / "maildir", checkpoint=False) as mail_sink:
        messages = _send_a_resend_among_others(mail_sink)

    code = main(["resent", "--dir", str(mail_sink.directory)])

    assert resent(messages) == [Resend("<ntc_3@acme.com>", "buyer@globex.com", (1, 4), ("ntc_3", "ntc_3"))]
    assert code == 0
    assert capsys.readouterr().out.splitlines() == ["<ntc_3@acme.com>\tbuyer@globex.com\t1,4\tntc_3"]


def _send_a_resend_among_others(mail_sink: MailSink) -> list[DeliveredMessage]:
    resend, _ = probe(_email("Cancelled: Kickoff", "<ntc_3@acme.com>"), mail_sink.host, mail_sink.port)
    resend = Envelope(resend.sender, resend.recipients, resend.data, resend.options, "ntc_3")
    other, _ = probe(_email("Invitation", "<ntc_4@acme.com>"), mail_sink.host, mail_sink.port)
    # The same Message-ID to someone else is a message to two people, not a resend.
    elsewhere, _ = probe(
        _email("Cancelled: Kickoff", "<ntc_3@acme.com>", to="lee@acme.com"), mail_sink.host, mail_sink.port
    )
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        for envelope in (resend, other, elsewhere, resend):
            session.send(envelope)
    finally:
        session.close()
    return mail_sink.wait_for(4)


def test_a_maildir_without_resends_reports_none(mail_sink, capsys):
    session = SmtpSession(mail_sink.host, mail_sink.port)
    try:
        for number in range(3):
            envelope, _ = probe(_email("Hello", f"<ntc_{number}@acme.com>"), mail_sink.host, mail_sink.port)
            session.send(envelope)
    finally:
        session.close()

    assert resent(mail_sink.wait_for(3)) == []
    assert main(["resent", "--dir", str(mail_sink.directory)]) == 0
    assert capsys.readouterr().out == ""
