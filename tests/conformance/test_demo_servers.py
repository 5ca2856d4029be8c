"""The demo servers pass the whole suite over real transports, and every operation is verified."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_helpers import CliRun, command, failures, suite
from support.waiting import wait_until

from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit._testing_surface import TESTING_ENV


def test_the_crm_passes_every_check_and_all_its_operations_are_verified(crm_by_cli: CliRun) -> None:
    result = crm_by_cli.result

    assert crm_by_cli.status == 0, crm_by_cli.stdout
    assert failures(result) == set()
    assert {outcome.outcome for outcome in result.outcomes} == {"passed"}
    assert result.verified_operations == ["update_deal", "move_amount", "charge_order", "export_report"]
    assert {outcome.requirement for outcome in result.outcomes} == {
        "J-2.1", "J-2.2", "J-3.1", "J-3.2", "J-3.3", "J-3.4",
        "J-4.1", "J-4.2", "J-4.3", "J-4.4", "J-4.5", "J-4.6", "J-4.7", "J-4.8",
    }  # fmt: skip


def test_the_calendar_passes_and_its_undo_really_mails_the_cancellations(
    tmp_path: Path, mail_sink_for_module: MailSink
) -> None:
    sink = mail_sink_for_module
    calendar = command(
        sys.executable, "-m", "hatp_journal.servers.calendar", "serve", "--db", tmp_path / "calendar.db",
        "--smtp-port", sink.port,
    )  # fmt: skip

    result = suite(calendar)

    assert failures(result) == set()
    assert result.verified_operations == ["create_event", "update_event"]
    assert "CANCEL" in {message.calendar_method for message in sink.messages()}


def test_the_email_server_passes_and_its_irreversible_send_is_verified_as_none(
    tmp_path: Path, mail_sink_for_module: MailSink
) -> None:
    email = command(
        sys.executable, "-m", "hatp_journal.servers.email.cli", "serve", "--db", tmp_path / "email.db",
        "--smtp-port", mail_sink_for_module.port,
    )  # fmt: skip

    result = suite(email)

    assert failures(result) == set()
    assert result.verified_operations == ["send_email", "draft_email", "delete_draft"]
    assert [report.kind for report in result.operations if report.tool == "send_email"] == ["none"]


@pytest.fixture
def crm_over_http(tmp_path: Path) -> Iterator[str]:
    """``hatp-crm serve --transport http`` started in testing mode; its URL once it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "hatp_journal.servers.crm.cli", "serve", "--db", str(tmp_path / "crm.db")]
    argv += ["--transport", "http", "--port", str(port)]
    server = subprocess.Popen(argv, env={**os.environ, TESTING_ENV: "1"}, stderr=subprocess.DEVNULL)
    try:
        alive = lambda: server.poll() is None  # noqa: E731
        wait_until(lambda: _listens(port), f"the CRM listening on port {port}", alive=alive)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_crm_reached_over_streamable_http_passes_too(crm_over_http: str) -> None:
    result = suite(crm_over_http)

    assert failures(result) == set()
    assert result.target == crm_over_http
    assert result.verified_operations == ["update_deal", "move_amount", "charge_order", "export_report"]


def _listens(port: int) -> bool:
    with socket.socket() as attempt:
        return attempt.connect_ex(("127.0.0.1", port)) == 0
