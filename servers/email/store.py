"""The mail server's tables (sent mail, drafts) and input checks.

Tables live in the journal's engine, so a draft and its undo record commit together. Table names
start with ``email_``: SQLModel metadata is shared by the process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from hatp_journal.servers.outbox import OutboxNotice
from hatp_journal.toolkit import Revision, ToolFailed, Versioned
from hatp_journal.toolkit.wire import wire_time

SERVER = "email://acme"
MAX_RECIPIENTS = 50

# Deliberately plain: one "@", no spaces, brackets, commas or quotes (so nothing can smuggle a
# second recipient or a header into the message).
_ADDRESS = re.compile(r"[^@\s<>()\[\],;:\"]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


class SentMail(SQLModel, table=True):
    """A message the SMTP server accepted, under its Message-ID."""

    __tablename__ = "email_sent"

    id: str = Field(primary_key=True)
    message_id: str = Field(unique=True)
    sender: str
    recipients_json: str
    refused_json: str = "[]"
    subject: str
    body: str
    sent_at: str


class Draft(Versioned, table=True):
    """A draft; deleting one keeps a tombstone (``status="deleted"``) so the deletion can be undone."""

    __tablename__ = "email_draft"

    id: str = Field(primary_key=True)
    recipients_json: str
    subject: str
    body: str
    status: str = "draft"


def sent_uri(sent_id: str) -> str:
    """The resource URI of a sent message."""
    return f"{SERVER}/sent/{sent_id}"


def draft_uri(draft_id: str) -> str:
    """The resource URI of a draft."""
    return f"{SERVER}/draft/{draft_id}"


def check_recipients(to: Sequence[str]) -> list[str]:
    """Distinct, plain addresses in the order given, or ToolFailed naming the bad ones."""
    recipients = list(dict.fromkeys(address.strip() for address in to))
    if not recipients:
        raise ToolFailed("name at least one recipient", field="to")
    if len(recipients) > MAX_RECIPIENTS:
        raise ToolFailed(f"at most {MAX_RECIPIENTS} recipients", field="to", limit=MAX_RECIPIENTS)
    invalid = [address for address in recipients if not _ADDRESS.fullmatch(address)]
    if invalid:
        raise ToolFailed(f"not an email address: {', '.join(invalid)}", field="to", invalid=invalid)
    return recipients


def check_subject(subject: str) -> str:
    """A one-line subject (a line break would start a new header)."""
    if "\r" in subject or "\n" in subject:
        raise ToolFailed("the subject must be one line", field="subject")
    return subject.strip()


def recipients_of(row: SentMail | Draft) -> list[str]:
    """The stored recipients."""
    found: list[str] = json.loads(row.recipients_json)
    return found


def draft_fields(draft: Draft) -> dict[str, Any]:
    """The fields a draft's content tag covers."""
    return {"to": recipients_of(draft), "subject": draft.subject, "body": draft.body, "status": draft.status}


def draft_view(draft: Draft) -> dict[str, Any]:
    """A draft as tools show it."""
    return {"id": draft.id, **draft_fields(draft), "version": draft.version}


def delivery_of(session: Session, sent: SentMail) -> str | None:
    """The outbox state of a sent message: ``sent``, ``prepared`` (not yet released) or ``failed``."""
    notice = session.exec(select(OutboxNotice).where(col(OutboxNotice.message_id) == sent.message_id)).first()
    return None if notice is None else notice.state


def sent_view(sent: SentMail, delivery: str | None = None) -> dict[str, Any]:
    """A sent message as tools show it; ``delivery`` is its outbox state when known."""
    shown = {
        "id": sent.id,
        "message_id": sent.message_id,
        "from": sent.sender,
        "to": recipients_of(sent),
        "refused": json.loads(sent.refused_json),
        "subject": sent.subject,
        "sent_at": sent.sent_at,
    }
    return shown if delivery is None else {**shown, "delivery": delivery}


def new_draft(draft_id: str, to: list[str], subject: str, body: str, by: str, now: datetime) -> Draft:
    """A draft at version v1."""
    draft = Draft(
        id=draft_id,
        recipients_json=json.dumps(to),
        subject=subject,
        body=body,
        version="v1",
        etag="",
        changed_by=by,
        changed_at=wire_time(now),
    )
    draft.etag = Revision.of(draft.version, draft_fields(draft)).etag
    return draft


def set_draft_status(
    session: Session, draft: Draft, status: str, by: str, now: datetime
) -> tuple[Revision, Revision]:
    """Delete (tombstone) or restore a draft, bumping its version; returns (before, after)."""
    draft.status = status
    session.add(draft)
    return draft.record_change(draft_fields(draft), by=by, at=now)


def live_draft(session: Session, draft_id: str) -> Draft:
    """The draft ``draft_id`` if it exists and is not deleted, or ToolFailed (not found)."""
    draft = session.get(Draft, draft_id)
    if draft is None or draft.status != "draft":
        raise ToolFailed(f"no draft {draft_id!r}", field="draft_id", reason="not_found")
    return draft


def list_sent(engine: Engine) -> list[dict[str, Any]]:
    """Every recorded sent message, oldest first (for the command line and tests)."""
    with Session(engine) as session:
        rows = session.exec(select(SentMail).order_by(col(SentMail.sent_at), col(SentMail.id))).all()
        return [sent_view(row, delivery_of(session, row)) for row in rows]
