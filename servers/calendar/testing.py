"""The calendar's hooks for the conformance suite's test-only surface (``docs/conformance.md``).

Published only in testing mode (``HATP_JOURNAL_TESTING=1``). Samples give times in another
timezone than the stored UTC, across midnight, and attendees twice in different spellings, so a
summary written from the arguments would show another day and another count.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hatp_journal.servers.calendar.itip import EventData, build_request
from hatp_journal.servers.calendar.store import event_of, event_uri, require_event, uid_of, write_event
from hatp_journal.toolkit import Tx
from hatp_journal.toolkit.testing import Sample, outside_edit_for, sample_for

COLLEAGUE = "eve@acme.com"


def calendar_testing_hooks(organizer: str) -> tuple[Callable[..., Any], ...]:
    """Sample makers and outside edits of one calendar server whose invitations come from ``organizer``."""

    @sample_for("create_event")
    def kickoff(tx: Tx) -> Sample:
        """A kickoff at 00:30 on Nov 5 in +01:00, which is Nov 4 in UTC (the summary must say so)."""
        return Sample(
            arguments={
                "summary": "Kickoff with Globex",
                "start": "2026-11-05T00:30:00+01:00",
                "end": "2026-11-05T00:55:00+01:00",
                "attendees": ["buyer@globex.com", " BUYER@globex.com ", "dana@acme.com"],
            },
            shows=['Create "Kickoff with Globex" on Nov 4'],
            hides=["Nov 5"],
        )

    @sample_for("update_event")
    def move_a_meeting(tx: Tx) -> Sample:
        """Move a fresh pipeline review (stored here first, as its organizer) to Nov 5, 23:15 UTC."""
        event = EventData(
            uid=f"review-{secrets.token_hex(6)}@acme.com",
            summary="Pipeline review",
            start=datetime(2026, 11, 10, 15, 0, tzinfo=UTC),
            end=datetime(2026, 11, 10, 16, 0, tzinfo=UTC),
            organizer=organizer,
            attendees=("dana@acme.com",),
        )
        write_event(tx.session, build_request(event, stamp=tx.now), by=organizer, now=tx.now)
        return Sample(
            arguments={
                "uid": event.uid,
                "start": "2026-11-06T00:15:00+01:00",
                "end": "2026-11-06T00:45:00+01:00",
            },
            resource=event_uri(event.uid),
            shows=["Nov 5 23:15 UTC"],
            hides=["Nov 6", "+01:00"],
        )

    @outside_edit_for("create_event")
    def eve_moves_the_kickoff(resource: str, tx: Tx) -> None:
        """Eve moves the event an hour later in her own calendar client."""
        _an_hour_later(resource, tx)

    @outside_edit_for("update_event")
    def eve_moves_the_review(resource: str, tx: Tx) -> None:
        """Eve moves the event an hour later in her own calendar client."""
        _an_hour_later(resource, tx)

    return kickoff, move_a_meeting, eve_moves_the_kickoff, eve_moves_the_review


def _an_hour_later(resource: str, tx: Tx) -> None:
    # Like a colleague's edit from the command line: stored and versioned, no mail sent.
    old = event_of(require_event(tx.session, uid_of(resource)))
    moved = replace(
        old, start=old.start + timedelta(hours=1), end=old.end + timedelta(hours=1), sequence=old.sequence + 1
    )
    write_event(tx.session, build_request(moved, stamp=tx.now), by=COLLEAGUE, now=tx.now)
