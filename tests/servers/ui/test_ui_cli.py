"""``hatp-ui serve`` refuses to start, with a message and exit status 2, when its undo window or its
browser can't be trusted."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.servers.ui.cli import main


def serve(tmp_path: Path, *arguments: str) -> list[str]:
    return ["serve", "--db", str(tmp_path / "ui.db"), *arguments]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.browser
def test_a_retention_that_disagrees_with_the_apps_trash_is_refused(
    fake_app: FakeApp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(serve(tmp_path, "--app-url", fake_app.url, "--retention-days", "7")) == 2
    assert "keeps invoices 30 days, but --retention-days says 7" in capsys.readouterr().err


@pytest.mark.browser
def test_without_a_retention_an_unreachable_app_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(serve(tmp_path, "--app-url", f"http://127.0.0.1:{closed_port()}")) == 2
    assert "cannot reach the app" in capsys.readouterr().err


def test_a_missing_chromium_is_refused_with_the_install_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = serve(tmp_path, "--app-url", "http://127.0.0.1:1", "--chromium", str(tmp_path / "none"))

    assert main(arguments) == 2
    assert "apt-get install chromium" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments",
    [["--app-url", "ftp://example"], ["--app-url", "http://x", "--retention-days", "0"], []],
)
def test_bad_arguments_exit_2(tmp_path: Path, arguments: list[str]) -> None:
    assert main(serve(tmp_path, *arguments)) == 2
