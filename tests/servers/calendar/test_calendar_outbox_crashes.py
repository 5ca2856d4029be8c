"""The calendar server killed (SIGKILL) at each point of sending a notice, then started again.

The kill happens inside a real ``hatp-calendar serve`` process at a named crash point
(``HATP_JOURNAL_CRASH_AT``, testing mode only); the restart is ``build`` over the same store, the
code ``serve`` runs, in this process. The mail sink is the witness: notices are counted by
Message-ID. A courier process a killed server started is stopped when the test ends.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from sqlmodel import Session, select

from hatp_journal.servers.calendar import build
from hatp_journal.servers.courier import stop_courier
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.outbox import OutboxNotice
from hatp_journal.toolkit import SigningKey, create_store_engine
from hatp_journal.toolkit.wire import META_KEY

pytestmark = pytest.mark.anyio

UNDO = {"requestId": "plan-1#e2"}


@pytest.fixture
def couriers_stopped(tmp_path: Path) -> Iterator[None]:
    """Stops the courier a killed ``serve`` left running, if any, when the test ends."""
    yield
    if (tmp_path / "calendar.db").exists():
        engine = create_store_engine(tmp_path / "calendar.db")
        stop_courier(engine)
        engine.dispose()


def killed_server(tmp_path: Path, sink: MailSink, crash_at: str) -> Client[Any]:
    """``hatp-calendar serve`` over stdio that SIGKILLs itself at ``crash_at``."""
    serve = ["serve", "--db", str(tmp_path / "calendar.db"), "--key", str(tmp_path / "calendar.key")]
    serve += ["--smtp-port", str(sink.port)]
    env = {**os.environ, "HATP_JOURNAL_TESTING": "1", "HATP_JOURNAL_CRASH_AT": crash_at}
    transport = StdioTransport(sys.executable, ["-m", "hatp_journal.servers.calendar", *serve], env=env)
    return Client(transport)


def restarted(tmp_path: Path, sink: MailSink) -> Client[Any]:
    """The server started again over the same store (``build`` flushes the outbox first)."""
    key = SigningKey.from_file(tmp_path / "calendar.key")
    mcp, _ = build(tmp_path / "calendar.db", key, sink.host, sink.port)
    return Client(mcp)


def message_ids(sink: MailSink, method: str) -> Counter[str]:
    return Counter(str(m.message["Message-ID"]) for m in sink.messages() if m.calendar_method == method)


def notices(tmp_path: Path) -> list[OutboxNotice]:
    engine = create_store_engine(tmp_path / "calendar.db")
    with Session(engine) as session:
        rows = list(session.exec(select(OutboxNotice)))
    engine.dispose()
    return rows


def all_sent(tmp_path: Path) -> list[OutboxNotice]:
    """The notices once none is ``prepared`` any more (a courier process may still be at work)."""
    given_up = time.monotonic() + 120  # only against a hang: the loop ends on progress
    rows = notices(tmp_path)
    while any(row.state == "prepared" for row in rows):
        assert time.monotonic() < given_up, "the notices were not delivered"
        time.sleep(0.02)
        rows = notices(tmp_path)
    return rows


async def created_kickoff(tmp_path: Path, sink: MailSink, kickoff: dict[str, Any]) -> dict[str, Any]:
    SigningKey.generate().save(tmp_path / "calendar.key")
    async with restarted(tmp_path, sink) as client:
        created = await client.call_tool_mcp("create_event", kickoff)
    sink.wait_for(2)
    journal: dict[str, Any] = created.meta[META_KEY]
    return {**UNDO, "token": journal["compensationToken"], "ifVersion": journal["effect"]["version"]}


@pytest.mark.parametrize(
    ("crash_at", "copies"),
    [
        # The case: killed with the cancellation staged, before the commit. Nothing left.
        ("outbox:staged#2", [1, 1]),
        ("outbox:committed", [1, 1]),
        # Killed once its courier process runs: the courier, not the restart, delivers them.
        ("outbox:courier-started", [1, 1]),
    ],
)
async def test_an_undo_killed_at_any_point_of_mailing_sends_each_cancellation_once_after_the_restart(
    tmp_path, mail_sink, kickoff, couriers_stopped, crash_at, copies
):
    undo = await created_kickoff(tmp_path, mail_sink, kickoff)

    async with killed_server(tmp_path, mail_sink, crash_at) as client:
        with pytest.raises(MCPError):
            await client.call_tool_mcp("hatp_journal_compensate", undo)
    async with restarted(tmp_path, mail_sink) as client:
        answer = (await client.call_tool_mcp("hatp_journal_compensate", undo)).meta[META_KEY]
        again = (await client.call_tool_mcp("hatp_journal_compensate", undo)).meta[META_KEY]
        uid = answer["resource"].rsplit("/", 1)[-1]
        event = (await client.call_tool_mcp("get_event", {"uid": uid})).structured_content
    rows = all_sent(tmp_path)
    mail_sink.wait_for(4)
    sent = message_ids(mail_sink, "CANCEL")

    assert answer["status"] == "done"
    assert again == answer  # the retry gets the stored answer and queues nothing
    assert (event["status"], event["version"]) == ("CANCELLED", "v2")
    assert sorted(sent.values()) == copies
    named = [line.split()[1] for line in answer["evidence"] if line.startswith("Message-ID")]
    assert sorted(named) == sorted(sent)
    assert {row.state for row in rows} == {"sent"}
    assert sorted(message_ids(mail_sink, "REQUEST").values()) == [1, 1]


async def test_a_create_killed_after_its_commit_still_invites_each_attendee_once_at_the_restart(
    tmp_path, mail_sink, kickoff
):
    SigningKey.generate().save(tmp_path / "calendar.key")

    async with killed_server(tmp_path, mail_sink, "outbox:committed") as client:
        with pytest.raises(MCPError):
            await client.call_tool_mcp("create_event", kickoff)
    prepared = notices(tmp_path)
    async with restarted(tmp_path, mail_sink) as client:
        events = (await client.call_tool_mcp("list_events", {})).structured_content["events"]

    assert {row.state for row in prepared} == {"prepared"}
    assert [event["summary"] for event in events] == [kickoff["summary"]]
    assert sorted(message_ids(mail_sink, "REQUEST").values()) == [1, 1]
    assert sorted(message_ids(mail_sink, "REQUEST")) == sorted(row.message_id for row in prepared)
    assert {row.state for row in notices(tmp_path)} == {"sent"}
