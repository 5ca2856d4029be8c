"""The D-881 kickoff over stdio: invited by iTIP REQUEST, cancelled by the undo with an iTIP CANCEL."""

from __future__ import annotations

import os
import sys

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import VerifyKey, verify_answer, verify_call
from hatp_journal.toolkit.wire import META_KEY, KeysAnswer

pytestmark = pytest.mark.anyio


def stdio_calendar(tmp_path, smtp_port):
    key = tmp_path / "calendar.key"
    SigningKey.generate().save(key)
    serve = ["serve", "--db", str(tmp_path / "calendar.db"), "--key", str(key), "--smtp-port", str(smtp_port)]
    transport = StdioTransport(
        sys.executable,
        ["-m", "hatp_journal.servers.calendar", *serve],
        env=dict(os.environ),
        cwd=str(tmp_path),
    )
    return Client(transport)


async def test_create_invites_each_attendee_and_its_undo_cancels_once_naming_who_was_notified(
    tmp_path, mail_sink, kickoff, itip
):
    async with stdio_calendar(tmp_path, mail_sink.port) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        created = await client.call_tool_mcp("create_event", kickoff)
        journal = created.meta[META_KEY]
        uid = created.structured_content["uid"]
        invitations = mail_sink.wait_for(2)

        token = journal["compensationToken"]
        check = (await client.call_tool_mcp("hatp_journal_check", {"token": token})).meta[META_KEY]
        undo = {"token": token, "ifVersion": journal["effect"]["version"]}
        first = await client.call_tool_mcp("hatp_journal_compensate", undo)
        cancels = mail_sink.wait_for(4)[2:]
        second = await client.call_tool_mcp("hatp_journal_compensate", undo)
        after = await client.call_tool_mcp("get_event", {"uid": uid})
        keys_meta = (await client.call_tool_mcp("hatp_journal_keys", {})).meta[META_KEY]

    keys = {key.kid: VerifyKey.from_wire(key) for key in KeysAnswer.model_validate(keys_meta).keys}
    declared = tools["create_event"].meta[META_KEY]["undo"]
    assert (declared["kind"], declared["window"]) == ("compensate", "P30D")
    assert declared["sideEffects"] == ["attendees get a cancellation notice"]

    assert not created.is_error
    assert verify_call(journal, "create_event", kickoff, keys)
    assert journal["effect"]["summary"] == 'Create "Kickoff with Globex" on Nov 4'
    assert journal["effect"]["resource"] == f"calendar://acme/event/{uid}"
    assert journal["effect"]["version"] == "v1"
    assert sorted(m.envelope_to for m in invitations) == [("buyer@globex.com",), ("dana@acme.com",)]
    for message in invitations:
        method, event = itip(message.calendar_parts()[0])
        assert (message.calendar_method, method) == ("REQUEST", "REQUEST")
        assert (str(event["UID"]), event["SEQUENCE"]) == (uid, 0)

    assert check["status"] == "ok"
    answer = first.meta[META_KEY]
    assert not first.is_error
    assert answer["status"] == "done"
    assert verify_answer(answer, keys)
    assert answer["sideEffects"] == ["cancellation notice sent to buyer@globex.com, dana@acme.com"]
    assert sorted(m.envelope_to for m in cancels) == [("buyer@globex.com",), ("dana@acme.com",)]
    for message in cancels:
        method, event = itip(message.calendar_parts()[0])
        assert (message.calendar_method, method) == ("CANCEL", "CANCEL")
        assert str(event["UID"]) == uid
        assert event["SEQUENCE"] > 0
        assert str(event["STATUS"]) == "CANCELLED"

    assert second.meta[META_KEY] == answer
    assert len(mail_sink.messages()) == 4  # the retry sent nothing more
    assert (after.structured_content["status"], after.structured_content["version"]) == ("CANCELLED", "v2")
