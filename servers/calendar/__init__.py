"""A journal-aware calendar MCP server (``hatp-calendar``): events as iCalendar, invitations by iTIP.

``create_event`` and ``update_event`` are undoable for 30 days; undoing a create mails every
attendee an iTIP CANCEL, undoing an update mails them the previous version. See README.md.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.servers.calendar.mail import Delivery, Mailer
    from hatp_journal.servers.calendar.server import DEFAULT_ORGANIZER, build, calendar_tools
    from hatp_journal.servers.calendar.store import (
        SERVER,
        CalendarEvent,
        UnknownEventError,
        edit_event,
        event_state,
        event_uri,
    )
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.calendar.mail": ["Delivery", "Mailer"],
            "hatp_journal.servers.calendar.server": ["DEFAULT_ORGANIZER", "build", "calendar_tools"],
            "hatp_journal.servers.calendar.store": [
                "SERVER",
                "CalendarEvent",
                "UnknownEventError",
                "edit_event",
                "event_state",
                "event_uri",
            ],
        },
    )

__all__ = [
    "DEFAULT_ORGANIZER",
    "SERVER",
    "CalendarEvent",
    "Delivery",
    "Mailer",
    "UnknownEventError",
    "build",
    "calendar_tools",
    "edit_event",
    "event_state",
    "event_uri",
]
