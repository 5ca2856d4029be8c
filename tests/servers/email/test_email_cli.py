"""``hatp-email``'s command line: bad input prints a message on stderr, exits 2 and creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatp_journal.servers.email.cli import main


def test_serve_with_a_sender_that_is_not_an_address_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["serve", "--db", str(tmp_path / "email.db"), "--from", "sales bot"])

    assert status == 2
    assert capsys.readouterr().err.startswith("hatp-email: --from: ")
    assert not (tmp_path / "email.db").exists()


def test_listing_what_was_sent_from_a_missing_store_is_bad_input_and_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sent", "--db", str(tmp_path / "nowhere.db")]) == 2
    assert capsys.readouterr().err == f"hatp-email: no email store at {tmp_path / 'nowhere.db'}\n"
    assert not (tmp_path / "nowhere.db").exists()


@pytest.mark.parametrize(
    "url",
    ["postgresql://postgres:{pw}@127.0.0.1:{closed}/x", "postgresql://postgres:{pw}@127.0.0.1:notaport/x"],
    ids=["unreachable", "malformed"],
)
def test_listing_from_a_store_url_that_cannot_be_used_is_bad_input_without_showing_the_password(
    url: str, closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["sent", "--db", url.format(pw="s3cret-pw", closed=closed_port)])
    err = capsys.readouterr().err

    assert status == 2
    assert err.startswith("hatp-email: ")
    assert "s3cret-pw" not in err
