"""The outbox's tables: the notices to send (``outbox_notice``) and the courier's lease
(``outbox_courier``), with a notice's states. Apart from :mod:`hatp_journal.servers.outbox`, which
stages notices, and :mod:`hatp_journal.servers.courier`, which delivers them: both import these.
"""

from __future__ import annotations

import json

from sqlalchemy import LargeBinary
from sqlmodel import Column, Field, SQLModel

PREPARED = "prepared"
SENT = "sent"
FAILED = "failed"


class OutboxNotice(SQLModel, table=True):
    """One message to send: its stable Message-ID, the exact bytes, and whether it went out."""

    __tablename__ = "outbox_notice"

    id: str = Field(primary_key=True)
    message_id: str = Field(unique=True)
    kind: str  # what it is, for people: "invitation", "cancellation notice", "email"
    about: str = Field(index=True)  # the resource it announces
    sender: str
    recipients_json: str  # the recipients the SMTP server accepted
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    options_json: str
    state: str = PREPARED
    code: str | None = None
    reason: str | None = None
    attempts: int = 0
    created_at: str
    sent_at: str | None = None

    def recipients(self) -> list[str]:
        """Who the notice goes to."""
        found: list[str] = json.loads(self.recipients_json)
        return found

    def view(self) -> dict[str, object]:
        """The notice as tools and the command line show it (without its bytes)."""
        return {
            "id": self.id,
            "messageId": self.message_id,
            "kind": self.kind,
            "about": self.about,
            "to": self.recipients(),
            "state": self.state,
            "code": self.code,
            "attempts": self.attempts,
            "sentAt": self.sent_at,
        }


class OutboxCourier(SQLModel, table=True):
    """The lease: which process delivers this outbox now (one row, operational state only)."""

    __tablename__ = "outbox_courier"

    name: str = Field(primary_key=True)  # always "courier": one deliverer per outbox
    host: str
    pid: int
    since: str
