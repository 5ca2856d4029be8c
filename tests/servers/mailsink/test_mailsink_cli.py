"""``hatp-mailsink``: serve, list and show, and exit code 2 (no traceback) on bad input."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from email.message import EmailMessage

import pytest

from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.servers.mailsink.cli import main
from hatp_journal.servers.smtp import send_message

BOUND = 15.0  # seconds; every wait on the child process is bounded by this


def _email(subject: str, calendar_method: str | None = None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "dana@acme.com"
    message["To"] = "buyer@globex.com, eve@acme.com"
    message["Subject"] = subject
    message.set_content("See the attached invitation.\n")
    if calendar_method:
        ics = f"BEGIN:VCALENDAR\r\nMETHOD:{calendar_method}\r\nEND:VCALENDAR\r\n"
        message.add_alternative(ics, subtype="calendar", params={"method": calendar_method})
    return message


def test_list_prints_one_line_per_message_with_envelope_subject_and_calendar_method(mail_sink, capsys):
    send_message(_email("Welcome to Acme"), mail_sink.host, mail_sink.port)
    send_message(_email("Kickoff with Globex", "REQUEST"), mail_sink.host, mail_sink.port)
    mail_sink.wait_for(2)

    assert main(["list", "--dir", str(mail_sink.directory)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t") for line in lines] == [
        ["1", "dana@acme.com", "buyer@globex.com,eve@acme.com", "Welcome to Acme", "-"],
        ["2", "dana@acme.com", "buyer@globex.com,eve@acme.com", "Kickoff with Globex", "REQUEST"],
    ]


def test_show_prints_the_whole_stored_message(mail_sink, capsys):
    send_message(_email("Kickoff with Globex", "CANCEL"), mail_sink.host, mail_sink.port)
    mail_sink.wait_for(1)

    assert main(["show", "--dir", str(mail_sink.directory), "1"]) == 0

    out = capsys.readouterr().out
    assert "X-Envelope-From: <dana@acme.com>" in out
    assert "Subject: Kickoff with Globex" in out
    assert "METHOD:CANCEL" in out


@pytest.mark.parametrize("number", ["0", "2", "-1"])
def test_show_with_a_message_number_that_does_not_exist_exits_2(mail_sink, capsys, number):
    send_message(_email("only one"), mail_sink.host, mail_sink.port)
    mail_sink.wait_for(1)

    assert main(["show", "--dir", str(mail_sink.directory), number]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert captured.err.startswith("hatp-mailsink: ")


@pytest.mark.parametrize("command", [["list"], ["show", "1"]])
def test_reading_a_directory_that_is_not_a_maildir_exits_2(tmp_path, capsys, command):
    assert main([command[0], "--dir", str(tmp_path / "missing"), *command[1:]]) == 2

    assert capsys.readouterr().err.startswith("hatp-mailsink: ")


@pytest.mark.parametrize("argv", [["show", "--dir", "x", "first"], ["list"], ["frobnicate"], []], ids=str)
def test_malformed_command_lines_exit_2_without_a_traceback(argv):
    result = subprocess.run(
        [sys.executable, "-m", "hatp_journal.servers.mailsink", *argv],
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() != ""


def test_serve_reports_its_port_stores_what_it_receives_and_stops_on_sigterm(tmp_path):
    maildir = tmp_path / "maildir"
    server = subprocess.Popen(
        [sys.executable, "-m", "hatp_journal.servers.mailsink", "serve", "--dir", str(maildir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        host, port = _listening_address(server)
        send_message(_email("via the command line"), host, port)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=BOUND) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=BOUND)
        server.communicate(timeout=BOUND)  # closes the pipes

    assert [m.subject for m in read_maildir(maildir)] == ["via the command line"]


def _listening_address(server: subprocess.Popen[str]) -> tuple[str, int]:
    assert server.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(server.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=BOUND):
            raise TimeoutError(f"hatp-mailsink serve printed nothing within {BOUND}s")
    line = server.stdout.readline().strip()
    prefix = "listening on "
    assert line.startswith(prefix), line
    host, _, port = line.removeprefix(prefix).rpartition(":")
    return host, int(port)


def test_list_of_an_empty_maildir_prints_nothing_and_succeeds(mail_sink, capsys):
    assert main(["list", "--dir", str(mail_sink.directory)]) == 0

    assert capsys.readouterr().out == ""
