"""``hatp-fakeapp serve``: prints its URL, serves until SIGINT/SIGTERM, exits 2 on bad input."""

from __future__ import annotations

import selectors
import signal
import socket
import sqlite3
import subprocess
import sys

import httpx2
import pytest

from hatp_journal.servers.fakeapp.cli import main

BOUND = 15.0  # seconds; every wait on a child process is bounded by this


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hatp_journal.servers.fakeapp", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _listening_url(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(server.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=BOUND):
            raise TimeoutError(f"hatp-fakeapp serve printed nothing within {BOUND}s")
    line = server.stdout.readline().strip()
    prefix = "listening on http://127.0.0.1:"
    assert line.startswith(prefix), line
    return line.removeprefix("listening on ")


def _finish(server: subprocess.Popen[str]) -> str:
    if server.poll() is None:
        server.kill()
        server.wait(timeout=BOUND)
    return server.communicate(timeout=BOUND)[1]  # closes the pipes; stderr


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_prints_its_url_serves_with_the_options_given_and_stops_cleanly(tmp_path, stop):
    db = tmp_path / "app.db"
    server = _serve(
        "--db", str(db), "--port", "0", "--layout", "b", "--retention-days", "7", "--test-controls"
    )
    try:
        url = _listening_url(server)
        with httpx2.Client(base_url=url, timeout=5.0, verify=False) as client:
            assert 'class="layout-b"' in client.get("/").text
            assert client.get("/_control/state").json()["retentionDays"] == 7
            assert client.post("/invoices", data={"customer": "Hooli", "amount": "9"}).status_code == 303
        server.send_signal(stop)
        assert server.wait(timeout=BOUND) == 0
    finally:
        stderr = _finish(server)

    assert "Traceback" not in stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT customer FROM invoices WHERE id = 4").fetchone() == ("Hooli",)


def test_serve_on_a_port_already_in_use_exits_2_naming_the_port(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        server = _serve("--db", str(tmp_path / "app.db"), "--port", str(port))
        try:
            assert server.wait(timeout=BOUND) == 2
        finally:
            stderr = _finish(server)

    assert stderr.startswith("hatp-fakeapp: error: --port")
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["serve"],
        ["frobnicate"],
        ["serve", "--db", "{tmp}/a.db", "--port", "70000"],
        ["serve", "--db", "{tmp}/a.db", "--port", "eighty"],
        ["serve", "--db", "{tmp}/a.db", "--layout", "c"],
        ["serve", "--db", "{tmp}/a.db", "--retention-days", "-1"],
        ["serve", "--db", "{tmp}/a.db", "--retention-days", "1.5"],
        ["serve", "--db", "{tmp}/no/such/dir/a.db"],
        ["serve", "--db", "{tmp}/not-sqlite.db"],
        ["serve", "--db", "{tmp}/foreign.db"],
    ],
    ids=str,
)
def test_bad_command_lines_exit_2_with_a_message_and_no_traceback(tmp_path, capsys, argv):
    (tmp_path / "not-sqlite.db").write_bytes(b"this is not a database file, not at all" * 100)
    with sqlite3.connect(tmp_path / "foreign.db") as conn:
        conn.execute("CREATE TABLE invoices (number TEXT)")

    assert main([arg.replace("{tmp}", str(tmp_path)) for arg in argv]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() != ""
    assert "Traceback" not in captured.err
    assert not (tmp_path / "a.db").exists()
    with sqlite3.connect(tmp_path / "foreign.db") as conn:  # someone else's file is left alone
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("invoices",)]
