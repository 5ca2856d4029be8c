"""``send_email`` over stdio, as an agent host runs ``hatp-email serve``: delivered, and irreversible."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


async def test_send_email_is_delivered_to_the_sink_and_declared_none_with_reason_and_remedy(
    stdio_mail, mail_sink
) -> None:
    declared = (await stdio_mail.declarations())["send_email"]

    reply = await stdio_mail.call(
        "send_email", to=["buyer@globex.com"], subject="Welcome to Acme", body="Glad to have you on board."
    )
    [delivered] = mail_sink.wait_for(1)

    assert (declared["undo"]["kind"], declared["reason"]) == ("none", "delivered to external recipients")
    assert declared["remedy"] == "send a correction email"
    assert not reply.error
    assert reply.journal["undo"]["kind"] == "none"
    assert reply.journal["reason"] == "delivered to external recipients"
    assert reply.journal["remedy"] == "send a correction email"
    assert "compensationToken" not in reply.journal
    assert reply.journal["effect"]["summary"] == "Email to buyer@globex.com"
    assert delivered.envelope_to == ("buyer@globex.com",)
    assert delivered.subject == "Welcome to Acme"
    assert delivered.message["Message-ID"] == reply.data["message_id"]
    assert [sent["message_id"] for sent in await stdio_mail.sent()] == [reply.data["message_id"]]
