"""The calendar store: each event as the iCalendar text last sent to its attendees, plus its version.

The text is the source of truth for the event (UID, SEQUENCE, organizer, attendees, times, status);
the columns beside it are what the journal needs: a revision label for people (``v3``), a content
tag for the toolkit, the status, and who changed it last.

A cancelled event stays in the store (with its CANCEL text) but is *gone* for the journal: its
state reads as ``version=None``, which is how the toolkit verifies that undoing a create worked.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from hatp_journal.servers.calendar.itip import EventData, InvalidEventError, build_request, parse_event
from hatp_journal.toolkit import ResourceState, Revision, Tx
from hatp_journal.toolkit.wire import wire_time

SERVER = "calendar://acme"
RESOURCE_PREFIX = f"{SERVER}/event/"
CANCELLED = "CANCELLED"

__all__ = [
    "CANCELLED",
    "RESOURCE_PREFIX",
    "SERVER",
    "CalendarEvent",
    "UnknownEventError",
    "all_events",
    "edit_event",
    "event_of",
    "event_state",
    "event_uri",
    "fields_of",
    "require_event",
    "uid_of",
    "write_event",
]


class CalendarEvent(SQLModel, table=True):
    """One event: the iCalendar text last sent to its attendees and its revision."""

    __tablename__ = "cal_event"

    uid: str = Field(primary_key=True)
    ics: str
    status: str
    version: str
    etag: str
    changed_by: str
    changed_at: str


class UnknownEventError(LookupError):
    """No event has this UID. ``code`` is stable; ``field`` names the argument."""

    code = "UNKNOWN_EVENT"
    field = "uid"

    def __init__(self, uid: str) -> None:
        super().__init__(f"no event with UID {uid!r}")
        self.uid = uid


def event_uri(uid: str) -> str:
    """The resource URI of an event: ``calendar://acme/event/<uid>``."""
    return RESOURCE_PREFIX + uid


def uid_of(resource: str) -> str:
    """Inverse of :func:`event_uri`."""
    return resource.removeprefix(RESOURCE_PREFIX)


def event_of(row: CalendarEvent) -> EventData:
    """The event as stored (parsed back from its iCalendar text)."""
    return parse_event(row.ics)


def fields_of(event: EventData) -> dict[str, str]:
    """The fields a person edits, as JSON; their content tag decides whether two revisions match.

    SEQUENCE is left out on purpose: restoring an event sends it again with a higher SEQUENCE,
    and the restored event must still match the content an earlier step left (no false conflict).
    """
    return {
        "summary": event.summary,
        "start": wire_time(event.start),
        "end": wire_time(event.end),
        "status": event.status,
    }


def require_event(session: Session, uid: str) -> CalendarEvent:
    """The stored event, or :class:`UnknownEventError`."""
    row = session.get(CalendarEvent, uid)
    if row is None:
        raise UnknownEventError(uid)
    return row


def all_events(session: Session) -> list[CalendarEvent]:
    """Every stored event (cancelled ones too), ordered by UID; callers sort by time."""
    return list(session.exec(select(CalendarEvent).order_by(col(CalendarEvent.uid))))


def write_event(session: Session, ics: str, *, by: str, now: datetime) -> tuple[Revision | None, Revision]:
    """Store ``ics`` as the event's latest text; return the revisions before and after.

    The row is flushed, so a constraint error surfaces here, before any mail goes out.
    """
    event = parse_event(ics)
    fields = fields_of(event)
    row = session.get(CalendarEvent, event.uid)
    before = None if row is None else Revision(row.version, row.etag)
    after = Revision.of("v1", fields) if before is None else before.bump(fields)
    values = {"ics": ics, "status": event.status, "version": after.version, "etag": after.etag}
    values |= {"changed_by": by, "changed_at": wire_time(now)}
    if row is None:
        row = CalendarEvent(uid=event.uid, **values)
    else:
        row.sqlmodel_update(values)
    session.add(row)
    session.flush()
    return before, after


def event_state(resource: str, tx: Tx) -> ResourceState:
    """The journal's view of an event now; a cancelled event counts as gone (``version=None``)."""
    row = tx.session.get(CalendarEvent, uid_of(resource))
    if row is None:
        return ResourceState(version=None)
    event = event_of(row)
    if event.status == CANCELLED:
        return ResourceState(version=None, fields=fields_of(event), changed_by=row.changed_by)
    return ResourceState(row.version, fields_of(event), row.etag, row.changed_by)


def edit_event(
    engine: Engine,
    uid: str,
    *,
    by: str,
    now: datetime,
    summary: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[str, Any]:
    """A colleague's edit made outside any agent run (e.g. Eve moving the kickoff).

    Writes through the same store and bumps the version, recording ``by``, so a later undo of the
    agent's step sees the change as a conflict. Attendees are not mailed: this stands for an edit
    made in the colleague's own calendar client. Raises :class:`UnknownEventError`, or
    ``InvalidEventError`` (with ``field``) for a cancelled event or invalid times.
    """
    with Session(engine) as session:
        row = require_event(session, uid)
        old = event_of(row)
        if old.status == CANCELLED:
            raise InvalidEventError("uid", f"event {uid} is cancelled")
        new = replace(
            old,
            summary=old.summary if summary is None else summary,
            start=old.start if start is None else start,
            end=old.end if end is None else end,
            sequence=old.sequence + 1,
        )
        _, after = write_event(session, build_request(new, stamp=now), by=by, now=now)
        session.commit()
    return {"uid": uid, "version": after.version, "changed_by": by, **fields_of(new)}
