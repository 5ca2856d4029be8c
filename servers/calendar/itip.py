"""iCalendar events and their iTIP messages (RFC 5546) sent by email (iMIP, RFC 6047).

Pure functions: build a ``METHOD:REQUEST`` or ``METHOD:CANCEL`` VCALENDAR from an
:class:`EventData`, wrap it in the email that calendar clients send, and parse it back.

Sequence numbers are the caller's record of what attendees last saw: :func:`build_request` sends
``event.sequence`` unchanged, and :func:`build_cancel` sends ``event.sequence + 1`` (a cancellation
is a new revision of the event that attendees last received), so pass it the event as last sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:  # imported where an invitation is built or read, not to start the server
    from icalendar import STATUS, Calendar

__all__ = [
    "PRODID",
    "EventData",
    "InvalidCalendarError",
    "InvalidEventError",
    "ItipError",
    "build_cancel",
    "build_request",
    "invitation_email",
    "parse_event",
    "parse_method",
]

PRODID = "-//HATP Journal//Calendar demo//EN"
METHODS = ("REQUEST", "CANCEL")
STATUSES = ("TENTATIVE", "CONFIRMED", "CANCELLED")

# Deliberately plain: a bare address with one "@" and no spaces, control characters or "mailto:"
# prefix. The part before "@" may be non-ASCII (zoë@globex.com); the domain is ASCII.
_EMAIL = re.compile(r"[^@\s\x00-\x1f\x7f<>()\[\],;:\"]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
# Left as they are in a mailto: URI (RFC 6068): unreserved (always) and these; the rest is
# percent-encoded as UTF-8, so "zoë@globex.com" is written "mailto:zo%C3%AB@globex.com".
_MAILTO_SAFE = "!$'()*+,:@"
# RFC 5545 TEXT has no control characters but TAB; a line break is written as an escaped "\n".
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ItipError(ValueError):
    """Base of this module's errors; ``code`` is stable, the message is for people."""

    code = "ITIP_ERROR"


class InvalidEventError(ItipError):
    """An event or invitation is not valid; ``field`` names the offending field."""

    code = "INVALID_EVENT"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidCalendarError(ItipError):
    """Text that is not a VCALENDAR holding exactly one usable VEVENT."""

    code = "INVALID_CALENDAR"


@dataclass(frozen=True, kw_only=True)
class EventData:
    """One calendar event. ``start``/``end`` must be timezone-aware; they are stored in UTC.

    Addresses (``organizer``, ``attendees``) are bare emails, without ``mailto:``. ``summary`` may
    hold line breaks (CR LF and CR are read as LF) and tabs, but no other control characters.
    """

    uid: str
    sequence: int = 0
    summary: str
    start: datetime
    end: datetime
    organizer: str
    attendees: tuple[str, ...] = ()
    status: str = "CONFIRMED"

    def __post_init__(self) -> None:
        if not self.uid or not self.uid.strip() or any(c in self.uid for c in "\r\n"):
            raise InvalidEventError("uid", "must be a non-empty single line")
        if isinstance(self.sequence, bool) or not isinstance(self.sequence, int):
            raise InvalidEventError("sequence", "must be an integer")
        if self.sequence < 0:
            raise InvalidEventError("sequence", f"must not be negative, got {self.sequence}")
        if control := _CONTROL.search(self.summary):
            raise InvalidEventError("summary", f"must not hold the control character {control.group()!r}")
        # frozen: normalise through object.__setattr__, once, at construction.
        object.__setattr__(self, "summary", self.summary.replace("\r\n", "\n").replace("\r", "\n"))
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, datetime):
                raise InvalidEventError(name, f"must be a datetime, got {value!r}")
            if value.tzinfo is None or value.utcoffset() is None:
                raise InvalidEventError(name, f"must be timezone-aware, got naive {value}")
            object.__setattr__(self, name, value.astimezone(UTC))
        if self.end <= self.start:
            raise InvalidEventError("end", f"must be after start ({self.start}), got {self.end}")
        _check_email("organizer", self.organizer)
        object.__setattr__(self, "attendees", tuple(self.attendees))
        for attendee in self.attendees:
            _check_email("attendees", attendee)
        if self.status not in STATUSES:
            raise InvalidEventError("status", f"must be one of {STATUSES}, got {self.status!r}")


def build_request(event: EventData, *, stamp: datetime | None = None) -> str:
    """An iTIP ``REQUEST`` inviting the attendees to ``event`` (at ``event.sequence``).

    ``stamp`` is the DTSTAMP (when this message was created); it defaults to now.
    """
    _require_attendees(event)
    if event.status == "CANCELLED":
        raise InvalidEventError("status", "a REQUEST cannot cancel; use build_cancel")
    from icalendar import STATUS

    return _calendar("REQUEST", event, event.sequence, STATUS(event.status), stamp)


def build_cancel(event: EventData, *, stamp: datetime | None = None) -> str:
    """An iTIP ``CANCEL`` of ``event`` to all its attendees: same UID, ``STATUS:CANCELLED``.

    ``event`` is the event as last sent; the CANCEL carries ``SEQUENCE`` ``event.sequence + 1``.
    """
    _require_attendees(event)
    from icalendar import STATUS

    return _calendar("CANCEL", event, event.sequence + 1, STATUS.CANCELLED, stamp)


def parse_event(ics: str) -> EventData:
    """The single VEVENT of an iCalendar text, as :class:`EventData`.

    A VEVENT without STATUS is read as ``CONFIRMED``. Raises :class:`InvalidCalendarError` for text
    that is not a VCALENDAR with exactly one VEVENT, and :class:`InvalidEventError` for an event
    that does not satisfy :class:`EventData` (e.g. a floating or all-day start).
    """
    calendar = _parse_calendar(ics)
    events = calendar.events
    if len(events) != 1:
        raise InvalidCalendarError(f"expected exactly one VEVENT, found {len(events)}")
    event = events[0]
    try:
        start, end = event.start, event.end
        organizer = _address(event.organizer) if event.organizer is not None else ""
        attendees = tuple(_address(attendee) for attendee in event.attendees)
    except ValueError as exc:  # icalendar's parse errors (and bad UTF-8 in a URI) are ValueErrors
        raise InvalidCalendarError(f"unreadable VEVENT: {exc}") from exc
    return EventData(
        uid=str(event.uid or ""),
        sequence=event.sequence,
        summary=str(event.summary or ""),
        start=_as_datetime("start", start),
        end=_as_datetime("end", end),
        organizer=organizer,
        attendees=attendees,
        status=str(event.status or "CONFIRMED"),
    )


def parse_method(ics: str) -> str:
    """The iTIP METHOD of an iCalendar text (upper case), or ``""`` if it has none."""
    return str(_parse_calendar(ics).get("METHOD", "")).upper()


def invitation_email(ics: str, method: str, sender: str, to: list[str], subject: str) -> EmailMessage:
    """The iMIP email (RFC 6047) carrying ``ics``, as calendar clients send it.

    ``multipart/alternative`` with a readable ``text/plain`` part and a
    ``text/calendar; method=...; charset=utf-8`` part. ``method`` must match the METHOD inside
    ``ics``; ``to`` are bare email addresses. Line breaks and other control characters in
    ``subject`` become single spaces: a header holds one line. Non-ASCII text is encoded when the
    message is sent (see :mod:`hatp_journal.servers.smtp`).
    """
    method = method.upper()
    if method not in METHODS:
        raise InvalidEventError("method", f"must be one of {METHODS}, got {method!r}")
    if (inside := parse_method(ics)) != method:
        raise InvalidEventError("method", f"{method} does not match METHOD:{inside or '(none)'}")
    _check_email("sender", parseaddr(sender)[1])
    if not to:
        raise InvalidEventError("to", "an invitation needs at least one recipient")
    for address in to:
        _check_email("to", address)
    from hatp_journal._shared.mail import compose  # here: the server starts without smtplib

    # Headers through the email library only (_shared/mail.py): the subject made one line there.
    message = compose(sender, to, subject, _plain_text(method, parse_event(ics)))
    message["Date"] = format_datetime(datetime.now(UTC))
    message["Message-ID"] = make_msgid(domain=parseaddr(sender)[1].rpartition("@")[2])
    message.add_alternative(ics, subtype="calendar", params={"method": method})
    return message


def _calendar(method: str, event: EventData, sequence: int, status: STATUS, stamp: datetime | None) -> str:
    from icalendar import Calendar, Event, vCalAddress

    # Only a REQUEST asks for a reply; nobody answers a cancellation.
    rsvp = True if method == "REQUEST" else None
    attendees = [
        vCalAddress.new(_mailto(address), role="REQ-PARTICIPANT", partstat="NEEDS-ACTION", rsvp=rsvp)
        for address in event.attendees
    ]
    vevent = Event.new(
        uid=event.uid,
        sequence=sequence,
        stamp=(stamp or datetime.now(UTC)).astimezone(UTC),
        start=event.start,
        end=event.end,
        summary=event.summary,
        organizer=vCalAddress.new(_mailto(event.organizer)),
        attendees=attendees,
        status=status,
    )
    # Calendar.new() would add a random calendar-level UID (RFC 7986); iTIP needs none.
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("method", method)
    calendar.add_component(vevent)
    ical: bytes = calendar.to_ical()
    return ical.decode("utf-8")


def _mailto(address: str) -> str:
    """The ``mailto:`` URI of a bare address: ASCII only, as a CAL-ADDRESS must be (RFC 5545)."""
    return "mailto:" + quote(address, safe=_MAILTO_SAFE)


def _address(uri: str) -> str:
    """The bare address in a ``mailto:`` URI; inverse of :func:`_mailto`.

    A non-ASCII address written raw (``mailto:zoë@...``, as earlier versions stored it) reads as is.
    """
    from icalendar import vCalAddress

    return unquote(vCalAddress(uri).email, errors="strict")


def _parse_calendar(ics: str) -> Calendar:
    from icalendar import Calendar

    try:
        calendar = Calendar.from_ical(ics)
    except ValueError as exc:  # icalendar's parse errors are ValueErrors
        raise InvalidCalendarError(f"not an iCalendar text: {exc}") from exc
    if not isinstance(calendar, Calendar) or calendar.name != "VCALENDAR":
        raise InvalidCalendarError("the text does not hold a VCALENDAR")
    return calendar


def _as_datetime(field: str, value: object) -> datetime:
    # Event.start is a date for all-day events; EventData holds timed events only.
    if not isinstance(value, datetime):
        raise InvalidEventError(field, f"must be a date-time, got {value!r}")
    return value


def _check_email(field: str, value: object) -> None:
    if not isinstance(value, str) or not _EMAIL.fullmatch(value):
        raise InvalidEventError(field, f"must be an email address, got {value!r}")


def _require_attendees(event: EventData) -> None:
    if not event.attendees:
        raise InvalidEventError("attendees", "an invitation needs at least one attendee")


def _plain_text(method: str, event: EventData) -> str:
    start, end = event.start, event.end
    when = f"{_day(start)}, {start:%H:%M}-{end:%H:%M} UTC"
    if end.date() != start.date():
        when = f"{_day(start)} {start:%H:%M} - {_day(end)} {end:%H:%M} UTC"
    headline = "This event has been cancelled" if method == "CANCEL" else "You are invited"
    return (
        f"{headline}: {event.summary}\n"
        f"When: {when}\n"
        f"Organizer: {event.organizer}\n"
        f"Attendees: {', '.join(event.attendees)}\n"
    )


def _day(moment: datetime) -> str:
    # "Wed 4 Nov 2026": %-d (no padding) is not portable.
    return f"{moment:%a} {moment.day} {moment:%b %Y}"
