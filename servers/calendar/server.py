"""The calendar MCP server: journaled tools over the store, mailing attendees through SMTP.

Each build gets its own tool functions (closures over its :class:`Mailer`), declared with the
toolkit's decorators; the logic lives in :mod:`.tools`, so the functions here stay one line each.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from pydantic import AwareDatetime

from hatp_journal.servers.calendar import tools
from hatp_journal.servers.calendar.constants import DEFAULT_ORGANIZER
from hatp_journal.servers.calendar.itip import _check_email
from hatp_journal.servers.calendar.mail import Mailer
from hatp_journal.servers.calendar.store import SERVER, event_state
from hatp_journal.servers.calendar.testing import calendar_testing_hooks
from hatp_journal.servers.calendar.tools import CANCEL_NOTICE, UPDATE_NOTICE, CancelPayload, RestorePayload
from hatp_journal.servers.outbox import INLINE, Outbox
from hatp_journal.toolkit import (
    Effect,
    Journal,
    SigningKey,
    Tx,
    Undone,
    compensates,
    create_store_engine,
    read_only,
    undoable,
)
from hatp_journal.toolkit.wire import utc_now

__all__ = ["DEFAULT_ORGANIZER", "build", "calendar_tools", "check_organizer"]


def calendar_tools(mailer: Mailer) -> tuple[Callable[..., Any], ...]:
    """The declared tools and compensations of one calendar server, mailing through ``mailer``."""

    @undoable(window="P30D", side_effects=[CANCEL_NOTICE])
    def create_event(
        summary: str, start: AwareDatetime, end: AwareDatetime, attendees: list[str], tx: Tx
    ) -> Effect:
        """Create a calendar event and email each attendee an invitation (iTIP REQUEST).

        start/end are ISO 8601 with a timezone, e.g. 2026-11-04T15:00:00Z. Undo within 30 days
        cancels the event: attendees get a cancellation notice.
        """
        return tools.create(mailer, tx, summary, start, end, attendees)

    @compensates(create_event, state=event_state)
    def cancel_event(payload: CancelPayload, tx: Tx) -> Undone:
        """Cancel the created event and mail every attendee an iTIP CANCEL."""
        return tools.cancel(mailer, payload, tx)

    @undoable(window="P30D", side_effects=[UPDATE_NOTICE])
    def update_event(
        uid: str,
        tx: Tx,
        summary: str | None = None,
        start: AwareDatetime | None = None,
        end: AwareDatetime | None = None,
    ) -> Effect:
        """Change an event's summary, start or end and email attendees the update.

        Times are ISO 8601 with a timezone. Undo within 30 days puts the previous values back:
        attendees get an updated invitation.
        """
        return tools.update(mailer, tx, uid, summary, start, end)

    @compensates(update_event, state=event_state)
    def restore_event(payload: RestorePayload, tx: Tx) -> Undone:
        """Put the previous summary and times back and email attendees the update."""
        return tools.restore(mailer, payload, tx)

    @read_only()
    def list_events(tx: Tx) -> dict[str, Any]:
        """List every event (cancelled ones too, with their status), by start time."""
        return tools.list_all(tx)

    @read_only()
    def get_event(uid: str, tx: Tx) -> dict[str, Any]:
        """Read one event by its UID."""
        return tools.get_one(tx, uid)

    return create_event, cancel_event, update_event, restore_event, list_events, get_event


def check_organizer(organizer: str) -> None:
    """Refuse an organizer that is not a bare email address (``InvalidEventError``, field organizer)."""
    # itip's own address check, so the server refuses at start what every invitation would refuse.
    _check_email("organizer", organizer)


def build(
    db: Path,
    key: SigningKey,
    smtp_host: str,
    smtp_port: int,
    clock: Callable[[], datetime] | None = None,
    organizer: str = DEFAULT_ORGANIZER,
    courier: str = INLINE,
) -> tuple[FastMCP, Journal]:
    """The calendar server and its journal, with events, outbox and undo records in one SQLite file.

    ``courier`` says who delivers the outbox (see :mod:`hatp_journal.servers.outbox`): ``"inline"``
    this process after each commit, ``"process"`` (what ``serve`` uses) a courier process of its
    own. Notices left unsent by a crash (``prepared``) are handed over before this returns.
    """
    check_organizer(organizer)
    mcp = FastMCP("hatp-calendar")
    # One engine for the events, the outbox and the toolkit's undo records: an effect, its mail and
    # its undo commit together.
    engine = create_store_engine(db)
    journal = Journal(SERVER, key=key, store=engine, clock=clock or utc_now)
    outbox = Outbox(engine, smtp_host, smtp_port, courier=courier)
    # The testing hooks are published only in testing mode (HATP_JOURNAL_TESTING=1).
    hooks = calendar_testing_hooks(organizer)
    journal.register(mcp, *calendar_tools(Mailer(outbox, organizer)), *hooks)
    # Mail a crash left committed but unsent goes out before the server takes calls.
    outbox.start()
    return mcp, journal
