"""``hatp-calendar edit``, ``show`` and ``outbox`` on a PostgreSQL store given as a URL, as the fleet
runs it: they work, and no message ever shows the database password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client

from hatp_journal.servers.calendar import build
from hatp_journal.servers.calendar.cli import main
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.anyio

PASSWORD = "s3cret-pw"


def with_password(url: str) -> str:
    """The store's URL with a password in it (the test cluster trusts every login, password or not)."""
    return url.replace("postgres@", f"postgres:{PASSWORD}@", 1)


async def test_edit_show_and_outbox_work_on_a_postgresql_url(
    postgres_url: str, mail_sink: MailSink, kickoff: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_password(postgres_url)
    mcp, journal = build(url, SigningKey.generate(), mail_sink.host, mail_sink.port)
    try:
        async with Client(mcp) as client:
            created = await client.call_tool_mcp("create_event", kickoff)
        uid = created.structured_content["uid"] if created.structured_content else ""
        mail_sink.wait_for(2)

        edited = main(["edit", "--db", url, uid, "--summary", "Kickoff (moved)", "--by", "eve@acme.com"])
        edit_out = capsys.readouterr()
        listed = main(["show", "--db", url])
        show_out = capsys.readouterr()
        outbox = main(["outbox", "--db", url])
        outbox_out = capsys.readouterr()
    finally:
        journal.engine.dispose()

    assert (edited, listed, outbox) == (0, 0, 0), edit_out.err + show_out.err + outbox_out.err
    assert json.loads(edit_out.out)["changed_by"] == "eve@acme.com"
    assert uid in show_out.out
    assert "Kickoff (moved)" in show_out.out
    assert [json.loads(line)["state"] for line in outbox_out.out.splitlines()] == ["sent", "sent"]


@pytest.mark.parametrize("command", ["edit", "show", "outbox"])
async def test_a_database_without_a_calendar_is_refused_without_showing_the_password(
    postgres_url: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_password(postgres_url)
    extra = ["cal-1", "--summary", "x", "--by", "eve@acme.com"] if command == "edit" else []

    status = main([command, "--db", url, *extra])
    err = capsys.readouterr().err

    assert status == 2
    assert "no calendar in the database at postgresql://postgres:***@" in err
    assert PASSWORD not in err


@pytest.mark.parametrize(
    "url",
    ["postgresql://postgres:{pw}@127.0.0.1:{closed}/x", "postgresql://postgres:{pw}@127.0.0.1:notaport/x"],
    ids=["unreachable", "malformed"],
)
async def test_a_store_url_that_cannot_be_used_is_refused_without_showing_the_password(
    url: str, closed_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["show", "--db", url.format(pw=PASSWORD, closed=closed_port)])
    err = capsys.readouterr().err

    assert status == 2
    assert err.startswith("hatp-calendar show: ")
    assert PASSWORD not in err
