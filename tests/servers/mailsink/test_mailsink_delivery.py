"""The mail sink receives real SMTP over loopback and keeps what it acknowledged in a Maildir."""

from __future__ import annotations

import shutil
from email.message import EmailMessage
from pathlib import Path

import pytest

from hatp_journal.servers.mailsink import MailSink, read_maildir
from hatp_journal.servers.smtp import MailDeliveryError, send_message


def _email(subject: str, to: str = "buyer@globex.com", **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "dana@acme.com"
    message["To"] = to
    message["Subject"] = subject
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(f"Body of {subject}\n")
    return message


def test_a_message_sent_over_smtp_is_stored_in_the_maildir_with_its_envelope(mail_sink):
    send_message(_email("Welcome to Acme", Bcc="audit@acme.com"), mail_sink.host, mail_sink.port)

    [delivered] = mail_sink.wait_for(1)

    assert delivered.envelope_from == "dana@acme.com"
    assert delivered.envelope_to == ("buyer@globex.com", "audit@acme.com")
    assert delivered.subject == "Welcome to Acme"
    assert delivered.message["Bcc"] is None  # the envelope knows; the message does not tell
    assert delivered.message.get_content().splitlines() == ["Body of Welcome to Acme"]
    assert list(mail_sink.directory.joinpath("new").iterdir()) != []


def test_messages_are_listed_in_the_order_they_were_delivered(mail_sink):
    subjects = [f"message {n}" for n in range(12)]
    for subject in subjects:
        send_message(_email(subject), mail_sink.host, mail_sink.port)

    assert [m.subject for m in mail_sink.wait_for(len(subjects))] == subjects


def test_an_envelope_header_forged_by_the_sender_does_not_replace_the_real_envelope(mail_sink):
    forged = _email("Forged", X_Envelope_To="<ceo@acme.com>", X_Envelope_From="<ceo@acme.com>")
    send_message(forged, mail_sink.host, mail_sink.port)

    [delivered] = mail_sink.wait_for(1)

    assert delivered.envelope_from == "dana@acme.com"
    assert delivered.envelope_to == ("buyer@globex.com",)


def test_stored_messages_survive_a_restart_and_are_readable_without_a_server(tmp_path):
    maildir = tmp_path / "maildir"
    with MailSink(maildir) as sink:
        send_message(_email("before restart"), sink.host, sink.port)
        sink.wait_for(1)

    assert [m.subject for m in read_maildir(maildir)] == ["before restart"]

    with MailSink(maildir) as restarted:
        send_message(_email("after restart"), restarted.host, restarted.port)
        delivered = restarted.wait_for(2)

    assert [m.subject for m in delivered] == ["before restart", "after restart"]
    assert [m.subject for m in read_maildir(maildir)] == ["before restart", "after restart"]


def test_waiting_for_more_messages_than_arrive_times_out_saying_how_many_arrived(mail_sink):
    send_message(_email("only one"), mail_sink.host, mail_sink.port)

    with pytest.raises(TimeoutError, match=r"but 1 arrived"):
        mail_sink.wait_for(2, timeout=0.2)


def test_reading_a_directory_that_is_not_a_maildir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_maildir(tmp_path / "nowhere")


def test_a_message_the_sink_cannot_store_is_refused_so_the_sender_knows(mail_sink):
    # 250 must mean "stored": with tmp/ gone the sink cannot write, so it must not say 250.
    shutil.rmtree(mail_sink.directory / "tmp")

    with pytest.raises(MailDeliveryError) as refused:
        send_message(_email("lost?"), mail_sink.host, mail_sink.port)

    assert refused.value.code == "MAIL_DELIVERY_FAILED"
    assert read_maildir(mail_sink.directory) == []


def test_sending_to_a_stopped_sink_fails_with_the_delivery_error_code(tmp_path):
    sink = MailSink(tmp_path / "maildir").start()
    port = sink.port
    sink.stop()

    with pytest.raises(MailDeliveryError) as unreachable:
        send_message(_email("nobody listens"), "127.0.0.1", port, timeout=2)

    assert unreachable.value.code == "MAIL_DELIVERY_FAILED"


def test_the_port_of_a_sink_that_is_not_running_is_an_error(tmp_path):
    with pytest.raises(RuntimeError):
        _ = MailSink(Path(tmp_path)).port


def test_a_sink_on_a_folder_made_empty_beforehand_makes_its_maildir_there_and_stores_mail(tmp_path: Path):
    folder = tmp_path / "mail"
    folder.mkdir()  # as a deployment makes the folder before the sink first starts

    with MailSink(folder) as sink:
        send_message(_email("Into a folder made beforehand"), sink.host, sink.port)
        [delivered] = sink.wait_for(1)

    assert delivered.subject == "Into a folder made beforehand"
    assert sorted(p.name for p in folder.iterdir()) == ["cur", "new", "tmp"]
