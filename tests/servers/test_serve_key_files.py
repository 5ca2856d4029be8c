"""Every demo server's ``serve --key``: a key file that can't be used exits 2, names it, changes nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from hatp_journal._shared.files import MAX_KEY_BYTES
from hatp_journal.servers.calendar.cli import main as calendar
from hatp_journal.servers.crm.cli import main as crm
from hatp_journal.servers.email.cli import main as email
from hatp_journal.servers.ui.cli import main as ui

SERVERS: dict[str, tuple[Callable[[Sequence[str]], int], list[str]]] = {
    "hatp-crm": (crm, []),
    "hatp-email": (email, []),
    "hatp-calendar": (calendar, []),
    # The key is read before the app is asked anything, so no app needs to run here.
    "hatp-ui": (ui, ["--app-url", "http://127.0.0.1:9/"]),
}

KEY_FILES: dict[str, bytes | None] = {
    "folder": None,
    "empty": b"",
    "too-large": b"-" * (MAX_KEY_BYTES + 1),
    "not-pem": b"not a key",
    "not-utf8": b"\x30\x82\xff\xfe",
    "inside-a-file": b"",  # --key names plain/k.key, whose folder is a file: it can't be created
}


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("kind", KEY_FILES)
def test_serve_with_a_key_file_that_cannot_be_used_exits_2_naming_it_and_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: str, kind: str
) -> None:
    run, extra = SERVERS[server]
    key = tmp_path / "k.key"
    content = KEY_FILES[kind]
    if content is None:
        key.mkdir()
    else:
        key.write_bytes(content)
    named = key / "k.key" if kind == "inside-a-file" else key

    status = run(["serve", "--db", str(tmp_path / "s.db"), "--key", str(named), *extra])

    assert status == 2
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(server)
    assert f"{named}: " in said
    assert key.is_dir() if content is None else key.read_bytes() == content
    assert not (tmp_path / "s.db").exists()
