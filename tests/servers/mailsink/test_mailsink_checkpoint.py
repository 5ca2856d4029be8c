"""The sink recognises a restart (CHECKPOINT, RFC 1845), spoken to by the standard library's smtplib:
a transaction named by the client's EHLO name and its TRANSID is stored once, however often it is
sent; a malformed TRANSID is refused; the index survives the sink's restart and can't be forged
from inside a message."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from pathlib import Path

import pytest

from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink

__all__ = ["mail_sink"]

SENDER, RECIPIENT = "sales-bot@acme.com", "buyer@globex.com"


def _message(message_id: str = "<ntc_1@acme.com>", **headers: str) -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = SENDER, RECIPIENT, "Cancelled: Kickoff"
    message["Message-ID"] = message_id
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content("The kickoff is cancelled.\n")
    return message.as_bytes().replace(b"\n", b"\r\n")


def _client(sink: MailSink, name: str = "courier.acme.com") -> smtplib.SMTP:
    client = smtplib.SMTP(sink.host, sink.port, local_hostname=name, timeout=10)
    client.ehlo()
    return client


def _send(client: smtplib.SMTP, data: bytes, transid: str) -> tuple[int, bytes]:
    """One whole transaction named ``transid``; the MAIL reply (250 or 355)."""
    mail = client.mail(SENDER, [f"TRANSID={transid}"])
    assert client.rcpt(RECIPIENT)[0] == 250
    if mail[0] == 355:
        assert client.docmd("DATA")[0] == 354
        client.send(b".\r\n")  # the sink holds the whole message: only its end
        assert client.getreply()[0] == 250
    else:
        assert client.data(data)[0] == 250
    return mail


def test_the_sink_offers_checkpoint_and_answers_a_restart_of_a_stored_message_with_its_whole_length(
    mail_sink,
):
    data = _message()
    with _client(mail_sink) as client:
        offered = client.has_extn("checkpoint")
        first = _send(client, data, "<ntc_1@courier.acme.com>")
    with _client(mail_sink) as client:  # a new connection, as the next courier's
        again = _send(client, data, "<ntc_1@courier.acme.com>")

    [stored] = mail_sink.messages()  # 250 means stored: nothing to wait for
    assert offered
    assert first[0] == 250
    assert again == (355, f"{len(data)} is the transaction offset".encode())
    assert stored.message_id == "<ntc_1@acme.com>"
    assert len(mail_sink.messages()) == 1


def test_one_transid_from_two_clients_is_two_transactions(mail_sink):
    with _client(mail_sink, "courier.acme.com") as client:
        _send(client, _message(), "<ntc_1@relay>")
    with _client(mail_sink, "courier.globex.com") as client:
        other = _send(client, _message(), "<ntc_1@relay>")

    assert other[0] == 250
    assert len(mail_sink.messages()) == 2


@pytest.mark.parametrize(
    "transid",
    ["ntc_1@courier", "<ntc_1>", "<ntc 1@courier>", "<ntc_1@a@b>", "<ntc;1@courier>", "<" + "x" * 80 + "@c>"],
    ids=["no-brackets", "no-domain", "space", "two-ats", "tspecial", "too-long"],
)
def test_a_malformed_transid_is_refused_with_501_and_nothing_is_stored(mail_sink, transid):
    with _client(mail_sink) as client:
        code, reply = client.mail(SENDER, [f"TRANSID={transid}"])

    assert (code, reply.split()[0]) == (501, b"5.5.4")
    assert mail_sink.messages() == []


def test_a_restart_that_sends_the_message_again_after_355_is_refused_and_stores_nothing(mail_sink):
    data = _message()
    with _client(mail_sink) as client:
        _send(client, data, "<ntc_1@courier.acme.com>")
    with _client(mail_sink) as client:
        assert client.mail(SENDER, ["TRANSID=<ntc_1@courier.acme.com>"])[0] == 355
        client.rcpt(RECIPIENT)
        code, _ = client.data(data)

    assert code == 554
    assert len(mail_sink.messages()) == 1


def test_a_sink_started_again_on_the_maildir_still_knows_the_transactions_it_stored(tmp_path: Path):
    data = _message()
    with MailSink(tmp_path / "maildir") as sink, _client(sink) as client:
        _send(client, data, "<ntc_1@courier.acme.com>")
    with MailSink(tmp_path / "maildir") as sink, _client(sink) as client:
        again = _send(client, data, "<ntc_1@courier.acme.com>")
        stored = sink.messages()

    assert again[0] == 355
    assert len(stored) == 1


def test_a_transid_header_inside_a_message_is_never_taken_for_one_the_sink_stored(tmp_path: Path):
    forged = _message(X_Envelope_Transid="<ntc_9@courier.acme.com> 10 courier.acme.com")
    with MailSink(tmp_path / "maildir") as sink, _client(sink) as client:
        assert client.sendmail(SENDER, [RECIPIENT], forged) == {}
    with MailSink(tmp_path / "maildir") as sink, _client(sink) as client:
        restart = _send(client, _message("<ntc_9@acme.com>"), "<ntc_9@courier.acme.com>")
        stored = sink.messages()

    assert restart[0] == 250  # a new transaction: the sink stored the message
    assert len(stored) == 2


def test_a_message_sent_in_full_while_the_same_transaction_was_stored_meanwhile_is_not_stored_again(
    mail_sink,
):
    data = _message()
    slow, fast = _client(mail_sink), _client(mail_sink)
    try:
        # Both start the transaction before either has stored it, so neither gets a 355...
        assert slow.mail(SENDER, ["TRANSID=<ntc_1@courier.acme.com>"])[0] == 250
        assert slow.rcpt(RECIPIENT)[0] == 250
        assert slow.docmd("DATA")[0] == 354
        assert _send(fast, data, "<ntc_1@courier.acme.com>")[0] == 250
        # ...and the slower one's message, arriving in full after the faster one's, is not stored.
        slow.send(data + b".\r\n")
        code, reply = slow.getreply()
    finally:
        slow.close()
        fast.close()

    assert code == 250
    assert b"Stored already" in reply
    assert len(mail_sink.messages()) == 1


def test_a_sink_without_checkpoint_offers_none_and_refuses_a_transid(tmp_path: Path):
    with MailSink(tmp_path / "maildir", checkpoint=False) as sink, _client(sink) as client:
        offered = client.has_extn("checkpoint")
        code, _ = client.mail(SENDER, ["TRANSID=<ntc_1@courier.acme.com>"])

    assert not offered
    assert code == 555


def test_a_transid_from_a_client_whose_ehlo_name_has_a_space_is_refused_with_501(mail_sink):
    with _client(mail_sink, "courier acme") as client:
        code, reply = client.mail(SENDER, ["TRANSID=<ntc_1@courier.acme.com>"])

    assert (code, reply.split()[0]) == (501, b"5.5.4")
    assert b"EHLO name" in reply
    assert mail_sink.messages() == []
