"""The email tools through a real in-memory MCP client and real SMTP: failures, drafts and their undo."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

pytestmark = pytest.mark.anyio


async def test_an_unreachable_smtp_server_fails_the_call_with_a_clear_error_and_records_nothing(
    unreachable_mail,
) -> None:
    reply = await unreachable_mail.call("send_email", to=["buyer@globex.com"], subject="Hi", body="Hello")

    assert reply.error
    assert reply.journal["error"]["code"] == "TOOL_FAILED"
    assert reply.journal["error"]["data"]["delivery"] == "MAIL_DELIVERY_FAILED"
    assert "compensationToken" not in reply.journal
    assert await unreachable_mail.sent() == []


async def test_a_bad_recipient_or_subject_is_refused_before_anything_is_sent(mail, mail_sink) -> None:
    bad_address = await mail.call(
        "send_email", to=["buyer@globex.com", "not an address"], subject="Hi", body=""
    )
    no_one = await mail.call("send_email", to=[], subject="Hi", body="")
    two_lines = await mail.call("send_email", to=["buyer@globex.com"], subject="Hi\nBcc: x@y.z", body="")

    assert bad_address.journal["error"]["data"]["invalid"] == ["not an address"]
    assert no_one.journal["error"]["data"]["field"] == "to"
    assert two_lines.journal["error"]["data"]["field"] == "subject"
    assert mail_sink.messages() == []
    assert await mail.sent() == []


async def test_undoing_draft_email_deletes_the_draft(mail, mail_sink) -> None:
    drafted = await mail.call("draft_email", to=["buyer@globex.com"], subject="Welcome", body="Draft text")

    assert drafted.journal["undo"]["kind"] == "compensate"
    assert [draft["id"] for draft in await mail.drafts()] == [drafted.data["id"]]

    undo = await mail.compensate(drafted.journal)
    check = await mail.call("hatp_journal_check", token=drafted.journal["compensationToken"])

    assert undo.journal["status"] == "done"
    assert check.journal["status"] == "done"
    assert await mail.drafts() == []
    assert mail_sink.messages() == []


async def test_undoing_delete_draft_brings_the_draft_back_unchanged(mail) -> None:
    drafted = await mail.call("draft_email", to=["buyer@globex.com"], subject="Welcome", body="Draft text")
    deleted = await mail.call("delete_draft", draft_id=drafted.data["id"])

    assert deleted.journal["effect"]["summary"].startswith(f"Deleted draft {drafted.data['id']}")
    assert deleted.journal["effect"]["changes"] == [
        {"field": "status", "before": "draft", "after": "deleted"}
    ]
    assert await mail.drafts() == []

    undo = await mail.compensate(deleted.journal)

    assert undo.journal["status"] == "done"
    [restored] = await mail.drafts()
    assert (restored["to"], restored["subject"], restored["body"]) == (
        ["buyer@globex.com"],
        "Welcome",
        "Draft text",
    )


async def test_undoing_a_draft_someone_already_deleted_is_a_conflict(mail) -> None:
    drafted = await mail.call("draft_email", to=["buyer@globex.com"], subject="Welcome", body="Draft text")
    await mail.call("delete_draft", draft_id=drafted.data["id"])

    undo = await mail.compensate(drafted.journal)

    assert undo.journal["code"] == "UNDO_CONFLICT"


async def test_deleting_an_unknown_draft_fails_with_tool_failed_and_no_token(mail) -> None:
    reply = await mail.call("delete_draft", draft_id="dr_missing")

    assert reply.journal["error"]["code"] == "TOOL_FAILED"
    assert (reply.journal["error"]["data"]["field"], reply.journal["error"]["data"]["reason"]) == (
        "draft_id",
        "not_found",
    )
    assert "compensationToken" not in reply.journal


class _RefuseOne:
    """An SMTP handler that refuses one recipient and accepts the rest."""

    def __init__(self, refused: str) -> None:
        self.refused, self.accepted_for = refused, list[list[str]]()

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address == self.refused:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.accepted_for.append(list(envelope.rcpt_tos))
        return "250 OK"


@pytest.fixture
def picky_smtp(closed_port: int) -> Iterator[tuple[int, _RefuseOne]]:
    """A real SMTP server on loopback that refuses gone@globex.com."""
    handler = _RefuseOne("gone@globex.com")
    controller = Controller(handler, hostname="127.0.0.1", port=closed_port)
    controller.start()
    try:
        yield controller.port, handler
    finally:
        controller.stop()


async def test_an_email_some_recipients_received_is_recorded_as_sent_to_them_and_names_the_refused(
    serve_mail, picky_smtp
) -> None:
    port, handler = picky_smtp
    async with serve_mail(port) as mail:
        reply = await mail.call(
            "send_email", to=["buyer@globex.com", "gone@globex.com"], subject="Welcome", body="Hi"
        )
        sent = await mail.sent()

    assert not reply.error
    assert handler.accepted_for == [["buyer@globex.com"]]
    assert reply.journal["undo"]["kind"] == "none"
    assert reply.data["refused"] == ["gone@globex.com"]
    assert [(row["to"], row["refused"]) for row in sent] == [(["buyer@globex.com"], ["gone@globex.com"])]
    assert [row["delivery"] for row in sent] == ["sent"]  # released from the outbox after the commit
