"""What the calendar tools and their compensations do, given a :class:`Mailer` and the transaction.

How mail relates to the transaction: a tool stores the event first (flushed, so store errors come
before any mail), then stages one message per attendee in the outbox, *inside* the call: the SMTP
server has accepted the attendee and the content, only the final "." is left, and it is sent after
the toolkit commits (see :mod:`hatp_journal.servers.outbox`). If any attendee can't be reached the
tool raises :class:`ToolFailed`, the transaction rolls back, the staged messages are dropped unsent,
and nothing is stored, nobody is mailed, no token is issued.

Compensations work the same way, except that every attendee is tried: each notice that can go
counts, and the undo receipt lists exactly who is notified (with each notice's Message-ID) and who
is not. Only if nobody could be reached does the undo fail (``UNDO_FAILED``) and leave the event
as it was. A retry of the same compensate request gets the stored answer and queues nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, NoReturn

from pydantic import AwareDatetime, BaseModel

from hatp_journal._shared.mail import MailDeliveryError
from hatp_journal.servers.calendar.itip import (
    EventData,
    InvalidEventError,
    build_cancel,
    build_request,
)
from hatp_journal.servers.calendar.mail import Delivery, Mailer
from hatp_journal.servers.calendar.store import (
    CANCELLED,
    CalendarEvent,
    UnknownEventError,
    all_events,
    event_of,
    event_uri,
    fields_of,
    require_event,
    write_event,
)
from hatp_journal.toolkit import Effect, ToolFailed, Tx, UndoFailed, Undone, summarize
from hatp_journal.toolkit.wire import Use

CANCEL_NOTICE = "attendees get a cancellation notice"
UPDATE_NOTICE = "attendees get an updated invitation"


class CancelPayload(BaseModel):
    """What undoing a create needs: the event to cancel."""

    uid: str


class RestorePayload(BaseModel):
    """What undoing an update needs: the event and the fields to put back."""

    uid: str
    summary: str
    start: AwareDatetime
    end: AwareDatetime


# -- tools ----------------------------------------------------------------------------------------


def create(
    mailer: Mailer, tx: Tx, summary: str, start: datetime, end: datetime, attendees: list[str]
) -> Effect:
    """Store a new event and invite each attendee (iTIP REQUEST, SEQUENCE 0)."""
    with _refused_as_tool_failure():
        if not summary.strip():
            raise InvalidEventError("summary", "must not be empty")
        event = EventData(
            uid=_new_uid(mailer.organizer),
            summary=summary,
            start=start,
            end=end,
            organizer=mailer.organizer,
            attendees=_unique(attendees),
        )
        ics = build_request(event, stamp=tx.now)
    _, after = write_event(tx.session, ics, by=mailer.organizer, now=tx.now)
    delivery = mailer.send(tx, ics, event.attendees, about=event_uri(event.uid), stop_at_first_failure=True)
    if not delivery.complete:
        _fail_delivery(mailer, delivery, "the invitation")
    row = require_event(tx.session, event.uid)
    stored = event_of(row)
    return Effect(
        result={**public(row), "invited": delivery.delivered, "notices": _notice_list(delivery)},
        # The attendees are in the effect's fields; the summary stays the line protocol.md §0 shows.
        summary=f'Create "{stored.summary}" on {_day(stored.start)}',
        resource=event_uri(stored.uid),
        version=after.version,
        etag=after.etag,
        fields=fields_of(stored),
        undo=CancelPayload(uid=stored.uid),
    )


def update(
    mailer: Mailer,
    tx: Tx,
    uid: str,
    summary: str | None,
    start: datetime | None,
    end: datetime | None,
) -> Effect:
    """Change an event's summary or times and send attendees the update (REQUEST, SEQUENCE + 1)."""
    with _refused_as_tool_failure():
        row = require_event(tx.session, uid)
        old = event_of(row)
        if old.status == CANCELLED:
            raise InvalidEventError("uid", f"event {uid} is cancelled")
        if summary is not None and not summary.strip():
            raise InvalidEventError("summary", "must not be empty")
        new = _changed(old, summary, start, end)
        ics = build_request(new, stamp=tx.now)
    if fields_of(new) == fields_of(old):
        raise ToolFailed("nothing to change: give a summary, start or end that differs", cause="NO_CHANGE")
    before, after = write_event(tx.session, ics, by=mailer.organizer, now=tx.now)
    assert before is not None  # the event existed
    delivery = mailer.send(tx, ics, new.attendees, about=event_uri(uid), stop_at_first_failure=True)
    if not delivery.complete:
        _fail_delivery(mailer, delivery, "the update")
    row = require_event(tx.session, uid)
    stored = event_of(row)
    return Effect(
        result={**public(row), "notified": delivery.delivered, "notices": _notice_list(delivery)},
        summary=summarize(f'Event "{old.summary}"', _display(old), _display(stored)),
        resource=event_uri(uid),
        before=before.version,
        version=after.version,
        before_etag=before.etag,
        etag=after.etag,
        fields=fields_of(stored),
        uses=[Use(resource=event_uri(uid), version=before.version)],
        undo=RestorePayload(uid=uid, summary=old.summary, start=old.start, end=old.end),
    )


def list_all(tx: Tx) -> dict[str, Any]:
    """Every event, cancelled ones too, by start time."""
    rows = sorted(all_events(tx.session), key=lambda row: (event_of(row).start, row.uid))
    return {"events": [public(row) for row in rows]}


def get_one(tx: Tx, uid: str) -> dict[str, Any]:
    """One event, or ``TOOL_FAILED`` naming ``uid``."""
    with _refused_as_tool_failure():
        return public(require_event(tx.session, uid))


# -- compensations --------------------------------------------------------------------------------


def cancel(mailer: Mailer, payload: CancelPayload, tx: Tx) -> Undone:
    """Cancel a created event: mail every attendee an iTIP CANCEL (same UID, SEQUENCE + 1)."""
    with _refused_as_undo_failure():
        row = require_event(tx.session, payload.uid)
    event = event_of(row)
    if event.status == CANCELLED:
        # Reached only by an override: it is cancelled already, and nobody needs a second notice.
        return Undone(version=row.version, side_effects=["the event was already cancelled; no notice sent"])
    ics = build_cancel(event, stamp=tx.now)
    _, after = write_event(tx.session, ics, by=_undo_actor(mailer), now=tx.now)
    delivery = _deliver_some(mailer, tx, ics, event, "cancellation notice")
    return Undone(
        version=after.version,
        side_effects=_notices("cancellation notice", delivery),
        evidence=[
            f"METHOD:CANCEL UID:{event.uid} SEQUENCE:{event.sequence + 1} STATUS:CANCELLED",
            *_message_ids(delivery),
        ],
    )


def restore(mailer: Mailer, payload: RestorePayload, tx: Tx) -> Undone:
    """Put an event's previous summary and times back and send attendees the update."""
    with _refused_as_undo_failure():
        row = require_event(tx.session, payload.uid)
        current = event_of(row)
        if current.status == CANCELLED:
            raise InvalidEventError("uid", f"event {payload.uid} is cancelled; there is nothing to restore")
        restored = _changed(current, payload.summary, payload.start, payload.end)
    ics = build_request(restored, stamp=tx.now)
    _, after = write_event(tx.session, ics, by=_undo_actor(mailer), now=tx.now)
    delivery = _deliver_some(mailer, tx, ics, restored, "updated invitation")
    return Undone(
        version=after.version,
        side_effects=_notices("updated invitation", delivery),
        evidence=[f"METHOD:REQUEST UID:{restored.uid} SEQUENCE:{restored.sequence}", *_message_ids(delivery)],
    )


# -- helpers --------------------------------------------------------------------------------------


def public(row: CalendarEvent) -> dict[str, Any]:
    """An event as tools and the command line show it."""
    event = event_of(row)
    return {
        "uid": event.uid,
        "resource": event_uri(event.uid),
        **fields_of(event),
        "organizer": event.organizer,
        "attendees": list(event.attendees),
        "sequence": event.sequence,
        "version": row.version,
        "changed_by": row.changed_by,
    }


@contextmanager
def _refused_as_tool_failure() -> Iterator[None]:
    try:
        yield
    except (InvalidEventError, UnknownEventError) as error:
        raise ToolFailed(str(error), field=error.field, cause=error.code) from None


@contextmanager
def _refused_as_undo_failure() -> Iterator[None]:
    try:
        yield
    except (InvalidEventError, UnknownEventError) as error:
        raise UndoFailed(str(error)) from None


def _fail_delivery(mailer: Mailer, delivery: Delivery, what: str) -> NoReturn:
    """Refuse the call: the rollback drops the messages staged for the others, unsent."""
    message = f"{what} could not be delivered ({'; '.join(delivery.problems())}); nothing was stored or sent"
    raise ToolFailed(
        message,
        # The first failure stopped the sending; its code says why (e.g. SMTPUTF8_NOT_OFFERED).
        cause=next(iter(delivery.codes.values()), MailDeliveryError.code),
        smtp=mailer.smtp,
        undelivered=delivery.failed,
        notSent=delivery.skipped,
    )


def _deliver_some(mailer: Mailer, tx: Tx, ics: str, event: EventData, what: str) -> Delivery:
    delivery = mailer.send(tx, ics, event.attendees, about=event_uri(event.uid), stop_at_first_failure=False)
    if not delivery.delivered:
        raise UndoFailed(f"no {what} could be delivered ({'; '.join(delivery.problems())}); nothing changed")
    return delivery


def _notices(what: str, delivery: Delivery) -> list[str]:
    sent = [f"{what} sent to {', '.join(delivery.delivered)}"]
    return sent + [f"{what} NOT delivered to {line}" for line in delivery.problems()]


def _message_ids(delivery: Delivery) -> list[str]:
    # A receiver recognises a resent copy by its Message-ID; the receipt names each one.
    return [f"Message-ID {notice.message_id} to {', '.join(notice.to)}" for notice in delivery.notices]


def _notice_list(delivery: Delivery) -> list[dict[str, Any]]:
    return [{"to": list(notice.to), "messageId": notice.message_id} for notice in delivery.notices]


def _changed(old: EventData, summary: str | None, start: datetime | None, end: datetime | None) -> EventData:
    return replace(
        old,
        summary=old.summary if summary is None else summary,
        start=old.start if start is None else start,
        end=old.end if end is None else end,
        sequence=old.sequence + 1,
    )


def _undo_actor(mailer: Mailer) -> str:
    return f"{mailer.organizer} (undo)"


def _new_uid(organizer: str) -> str:
    # RFC 5545 suggests a UID with the organizer's domain on the right.
    return f"evt-{secrets.token_hex(8)}@{organizer.rpartition('@')[2]}"


def _unique(attendees: list[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for address in attendees:
        seen.setdefault(address.strip().lower(), address.strip())
    return tuple(seen.values())


def _day(moment: datetime) -> str:
    return f"{moment:%b} {moment.day}"


def _display(event: EventData) -> dict[str, str]:
    return {
        "summary": event.summary,
        "start": f"{_day(event.start)} {event.start:%H:%M} UTC",
        "end": f"{_day(event.end)} {event.end:%H:%M} UTC",
    }
