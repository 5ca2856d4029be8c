"""Email as a journal-aware MCP server: sending (irreversible) and drafts (reversible).

``send_email`` goes through SMTP up to the message content before it records anything, so a
refused or unreachable delivery is an error result and nothing is recorded; the message is then
written to the outbox with the sent-mail row, and released (the final ".") after the commit —
see :mod:`hatp_journal.servers.outbox` for what survives a crash at each point.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from pydantic import BaseModel
from sqlmodel import col, select

from hatp_journal._shared.mail import MailDeliveryError, compose
from hatp_journal.servers.outbox import INLINE, Outbox
from hatp_journal.toolkit import (
    Effect,
    Journal,
    ResourceState,
    SigningKey,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    compensates,
    create_store_engine,
    irreversible,
    read_only,
    undoable,
)
from hatp_journal.toolkit.versions import field_changes
from hatp_journal.toolkit.wire import Use, utc_now, wire_time

from .store import (
    SERVER,
    Draft,
    SentMail,
    check_recipients,
    check_subject,
    delivery_of,
    draft_fields,
    draft_uri,
    draft_view,
    live_draft,
    new_draft,
    recipients_of,
    sent_uri,
    sent_view,
    set_draft_status,
)
from .testing import TESTING_HOOKS

AGENT = "agent"
UNDO = "undo"


@dataclass(frozen=True)
class MailSettings:
    """Where ``send_email`` delivers and who it sends as."""

    host: str = "127.0.0.1"
    port: int = 25
    sender: str = "sales-bot@acme.com"
    timeout: float = 10.0


class DraftRef(BaseModel):
    """What undoing a draft's creation or deletion needs."""

    draft_id: str


def mail_tools(settings: MailSettings, outbox: Outbox) -> tuple[Callable[..., Any], ...]:
    """Every tool and compensation, with ``send_email`` sending as ``settings`` says through ``outbox``."""

    @irreversible(reason="delivered to external recipients", remedy="send a correction email")
    def send_email(to: list[str], subject: str, body: str, tx: Tx) -> Effect:
        """Send an email now. It cannot be unsent; the remedy for a mistake is a correction email."""
        return _send(settings, outbox, check_recipients(to), check_subject(subject), body, tx)

    return (send_email, draft_email, discard_draft, delete_draft, restore_draft, list_drafts, list_sent)


def _send(
    settings: MailSettings, outbox: Outbox, recipients: list[str], subject: str, body: str, tx: Tx
) -> Effect:
    sent_id = secrets.token_hex(8)
    message = _compose(settings.sender, recipients, subject, body, tx.now)
    # Stage before touching the store: the SQLite write lock is not held across the SMTP dialogue,
    # and if the server refuses, the tool raises with nothing recorded and nothing sent.
    try:
        staged = outbox.stage(tx, message, kind="email", about=sent_uri(sent_id))
    except MailDeliveryError as error:
        # Only a refusal of every recipient is the fault of the "to" argument.
        blame = {"field": "to"} if error.refused else {}
        raise ToolFailed(
            f"email not delivered: {error.reason}",
            **blame,
            delivery=error.code,
            reason=error.reason,
            refused=_refused(recipients, error.refused),
            smtp=f"{settings.host}:{settings.port}",
        ) from None
    # Some recipients may have been refused: the others get it, so it is recorded and reported.
    refused = _refused(recipients, staged.refused)
    delivered = [address for address in recipients if address not in refused]
    row = SentMail(
        id=sent_id,
        message_id=staged.message_id,
        sender=settings.sender,
        recipients_json=json.dumps(delivered),
        refused_json=json.dumps(refused),
        subject=str(message["Subject"]),
        body=body,
        sent_at=wire_time(tx.now),
    )
    tx.session.add(row)
    # Who received it matters when it can't be taken back (protocol.md §0); the subject is in the result.
    summary = f"Email to {', '.join(recipients_of(row))}"
    if refused:
        summary += f" (refused by the server for {', '.join(refused)})"
    return Effect(result=sent_view(row), summary=summary, resource=sent_uri(row.id))


def _refused(recipients: list[str], refused: dict[str, Any]) -> list[str]:
    said_no = {address.lower() for address in refused}
    return [address for address in recipients if address.lower() in said_no]


def _compose(sender: str, recipients: list[str], subject: str, body: str, now: datetime) -> EmailMessage:
    # The outbox sets the Message-ID: the notice's own, kept if the message is ever sent again.
    message = compose(sender, recipients, subject, body)  # headers through the email library only
    message["Date"] = format_datetime(now)
    return message


@undoable(window="P30D")
def draft_email(to: list[str], subject: str, body: str, tx: Tx) -> Effect:
    """Save an email as a draft (nothing is sent). Undo deletes the draft."""
    draft = new_draft(
        f"dr_{secrets.token_hex(6)}", check_recipients(to), check_subject(subject), body, AGENT, tx.now
    )
    tx.session.add(draft)
    return Effect(
        result=draft_view(draft),
        summary=f"Draft {draft.id} to {', '.join(recipients_of(draft))}: {draft.subject}",
        resource=draft_uri(draft.id),
        before=None,
        version=draft.version,
        etag=draft.etag,
        fields=draft_fields(draft),
        undo=DraftRef(draft_id=draft.id),
    )


def live_draft_state(resource: str, tx: Tx) -> ResourceState:
    """A draft as ``draft_email`` sees it: a deleted draft does not exist."""
    draft = tx.session.get(Draft, resource.rsplit("/", 1)[-1])
    if draft is None or draft.status != "draft":
        return ResourceState(version=None)
    return draft.state(draft_fields(draft))


@compensates(draft_email, state=live_draft_state)
def discard_draft(payload: DraftRef, tx: Tx) -> Undone:
    """Delete the draft the call created."""
    draft = tx.session.get(Draft, payload.draft_id)
    if draft is not None and draft.status == "draft":
        set_draft_status(tx.session, draft, "deleted", UNDO, tx.now)
    return Undone(version=None)


@undoable(window="P30D")
def delete_draft(draft_id: str, tx: Tx) -> Effect:
    """Delete a draft. Undo brings it back unchanged."""
    draft = live_draft(tx.session, draft_id)
    was = draft_fields(draft)
    before, after = set_draft_status(tx.session, draft, "deleted", AGENT, tx.now)
    return Effect(
        result=draft_view(draft),
        summary=f"Deleted draft {draft.id} to {', '.join(recipients_of(draft))}: {draft.subject}",
        changes=field_changes(was, draft_fields(draft)),
        resource=draft_uri(draft.id),
        before=before.version,
        version=after.version,
        before_etag=before.etag,
        etag=after.etag,
        fields=draft_fields(draft),
        undo=DraftRef(draft_id=draft.id),
    )


def draft_record_state(resource: str, tx: Tx) -> ResourceState:
    """A draft as ``delete_draft`` sees it: its tombstone counts."""
    draft = tx.session.get(Draft, resource.rsplit("/", 1)[-1])
    if draft is None:
        return ResourceState(version=None)
    return draft.state(draft_fields(draft))


@compensates(delete_draft, state=draft_record_state)
def restore_draft(payload: DraftRef, tx: Tx) -> Undone:
    """Bring a deleted draft back."""
    draft = tx.session.get(Draft, payload.draft_id)
    if draft is None:
        raise UndoFailed(f"draft {payload.draft_id} is gone", draft=payload.draft_id)
    if draft.status == "draft":
        return Undone(version=draft.version)
    _, after = set_draft_status(tx.session, draft, "draft", UNDO, tx.now)
    return Undone(version=after.version)


@read_only()
def list_drafts(tx: Tx) -> Effect:
    """List the drafts (deleted ones are not shown)."""
    drafts = tx.session.exec(select(Draft).where(col(Draft.status) == "draft").order_by(col(Draft.id))).all()
    return Effect(
        result={"drafts": [draft_view(draft) for draft in drafts]},
        summary=f"Listed {len(drafts)} draft(s)",
        resource=f"{SERVER}/drafts",
        uses=[Use(resource=draft_uri(draft.id), version=draft.version) for draft in drafts],
    )


@read_only()
def list_sent(tx: Tx) -> Effect:
    """List the emails sent so far, oldest first, each with its delivery state (sent, prepared, failed)."""
    rows = tx.session.exec(select(SentMail).order_by(col(SentMail.sent_at), col(SentMail.id))).all()
    return Effect(
        result={"sent": [sent_view(row, delivery_of(tx.session, row)) for row in rows]},
        summary=f"Listed {len(rows)} sent email(s)",
        resource=f"{SERVER}/sent",
    )


def build(
    db: Path | str,
    key: SigningKey,
    clock: Callable[[], datetime] | None = None,
    *,
    smtp: MailSettings | None = None,
    courier: str = INLINE,
) -> tuple[FastMCP, Journal]:
    """The email server and its journal over the SQLite file ``db``, sending through ``smtp``.

    ``courier`` says who delivers the outbox (see :mod:`hatp_journal.servers.outbox`): ``"inline"``
    this process after each commit, ``"process"`` (what ``serve`` uses) a courier process of its
    own. Messages left unsent by a crash (``prepared``) are handed over before this returns.
    """
    mcp = FastMCP("hatp-email", instructions="Acme's outgoing email: send now, or keep drafts.")
    settings = smtp or MailSettings()
    engine = create_store_engine(db)
    journal = Journal(SERVER, key=key, store=engine, clock=clock or utc_now)
    outbox = Outbox(engine, settings.host, settings.port, settings.timeout, courier=courier)
    # The testing hooks are published only in testing mode (HATP_JOURNAL_TESTING=1).
    journal.register(mcp, *mail_tools(settings, outbox), *TESTING_HOOKS)
    # Mail a crash left committed but unsent goes out before the server takes calls.
    outbox.start()
    return mcp, journal
