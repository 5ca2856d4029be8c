"""``hatp-crm``: the colleague's edit and show commands, bad input, and serving over HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from fastmcp import Client

from hatp_journal.servers.crm import build
from hatp_journal.servers.crm.cli import main
from hatp_journal.toolkit import SigningKey

CLI = ["-m", "hatp_journal.servers.crm.cli"]
BOUND = 30  # seconds for the HTTP server to start (its imports alone take a few)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A seeded CRM store on disk."""
    db = tmp_path / "crm.db"
    build(db, SigningKey.generate())
    return db


def test_edit_moves_the_deal_bumps_its_version_and_records_the_editor(store, capsys) -> None:
    status = main(["edit", "--db", str(store), "D-881", "--stage", "Negotiation", "--by", "eve@acme.com"])

    shown = json.loads(capsys.readouterr().out)
    assert status == 0
    assert (shown["stage"], shown["version"], shown["changed_by"]) == ("Negotiation", "v13", "eve@acme.com")
    assert main(["show", "--db", str(store), "D-881"]) == 0
    assert json.loads(capsys.readouterr().out)["stage"] == "Negotiation"


def test_show_writes_controls_and_bidi_overrides_as_json_escapes_and_keeps_accents(store, capsys) -> None:
    editor = "Zoë\x1b[2J\u009b31m\u2028\u202emoc.emca@eve\u200b"
    assert main(["edit", "--db", str(store), "D-881", "--stage", "Won", "--by", editor]) == 0
    capsys.readouterr()

    assert main(["show", "--db", str(store), "D-881"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["changed_by"] == editor
    assert '"changed_by": "Zoë\\u001b[2J\\u009b31m\\u2028\\u202emoc.emca@eve\\u200b"' in printed


@pytest.mark.parametrize(
    "arguments",
    [
        ["edit", "D-881", "--stage", "Closed", "--by", "eve@acme.com"],
        ["edit", "D-999", "--stage", "Won", "--by", "eve@acme.com"],
        ["show", "D-999"],
    ],
    ids=["unknown stage", "unknown deal", "show unknown deal"],
)
def test_bad_input_prints_on_stderr_exits_2_and_changes_nothing(store, capsys, arguments) -> None:
    command, *rest = arguments

    status = main([command, "--db", str(store), *rest])

    assert status == 2
    assert capsys.readouterr().err.startswith("hatp-crm: ")
    assert main(["show", "--db", str(store), "D-881"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "v12"


def test_a_missing_store_is_bad_input_and_is_not_created(tmp_path, capsys) -> None:
    missing = tmp_path / "nowhere.db"

    assert main(["show", "--db", str(missing), "D-881"]) == 2
    assert not missing.exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def _wait_for_line(stream: ByteReceiveStream, marker: bytes) -> None:
    seen = b""
    async for chunk in stream:
        seen += chunk
        if marker in seen:
            return
    raise AssertionError(f"the server exited before printing {marker!r}: {seen.decode(errors='replace')}")


@pytest.mark.anyio
async def test_serve_over_http_answers_get_deal(tmp_path) -> None:
    port = _free_port()
    command = [sys.executable, *CLI, "serve", "--db", str(tmp_path / "crm.db"), "--transport", "http"]
    process = await anyio.open_process(
        [*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        with anyio.fail_after(BOUND):
            await _wait_for_line(process.stderr, b"Uvicorn running on")
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                result = await client.call_tool_mcp("get_deal", {"deal_id": "D-881"})
    finally:
        process.kill()
        await process.wait()

    assert not result.is_error
    assert result.structured_content is not None
    assert (result.structured_content["stage"], result.structured_content["version"]) == ("Proposal", "v12")


def test_serve_with_a_store_path_that_is_a_folder_is_bad_input_naming_it(tmp_path, capsys) -> None:
    (tmp_path / "crm.db").mkdir()

    status = main(["serve", "--db", str(tmp_path / "crm.db"), "--key", str(tmp_path / "crm.key")])

    assert status == 2
    said = capsys.readouterr().err
    assert (
        said
        == f"hatp-crm: STORE_UNUSABLE: the store {tmp_path / 'crm.db'} is a folder, not a database file\n"
    )


def test_serve_with_a_store_that_is_not_a_database_is_bad_input_and_keeps_the_file(tmp_path, capsys) -> None:
    (tmp_path / "crm.db").write_text("a spreadsheet export, not a database " * 10)

    status = main(["serve", "--db", str(tmp_path / "crm.db"), "--key", str(tmp_path / "crm.key")])

    assert status == 2
    assert capsys.readouterr().err.startswith(
        f"hatp-crm: STORE_UNUSABLE: cannot open the store {tmp_path / 'crm.db'}: "
    )
    assert (tmp_path / "crm.db").read_text().startswith("a spreadsheet export")


def test_serve_on_a_database_that_does_not_answer_is_bad_input_with_its_code(tmp_path, capsys) -> None:
    with socket.socket() as probe:  # bound, never listening: a connection to it is refused
        probe.bind(("127.0.0.1", 0))
        url = f"postgresql://crm@127.0.0.1:{probe.getsockname()[1]}/crm"
        status = main(["serve", "--db", url, "--key", str(tmp_path / "crm.key")])

    assert status == 2
    assert capsys.readouterr().err.startswith("hatp-crm: STORE_UNREACHABLE: ")


def test_serve_on_a_database_url_without_a_key_file_is_bad_input(tmp_path, capsys) -> None:
    status = main(["serve", "--db", "postgresql://crm@127.0.0.1/crm"])

    assert status == 2
    assert "--key" in capsys.readouterr().err
