"""iTIP REQUEST/CANCEL built, mailed (iMIP) through a real SMTP sink, and parsed back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from icalendar import Calendar

from hatp_journal.servers.calendar.itip import (
    PRODID,
    EventData,
    InvalidCalendarError,
    InvalidEventError,
    build_cancel,
    build_request,
    invitation_email,
    parse_event,
    parse_method,
)
from hatp_journal.servers.smtp import send_message

START = datetime(2026, 11, 4, 15, 0, tzinfo=UTC)
STAMP = datetime(2026, 11, 3, 14, 2, 10, tzinfo=UTC)
KICKOFF = EventData(
    uid="kickoff-d881@acme.com",
    sequence=0,
    summary="Kickoff with Globex",
    start=START,
    end=START + timedelta(hours=1),
    organizer="dana@acme.com",
    attendees=("buyer@globex.com", "eve@acme.com"),
)


def test_a_request_round_trips_through_parse_event():
    ics = build_request(KICKOFF, stamp=STAMP)

    assert parse_event(ics) == KICKOFF
    assert parse_method(ics) == "REQUEST"


def test_a_request_carries_what_calendar_clients_need_to_show_an_invitation():
    calendar = Calendar.from_ical(build_request(KICKOFF, stamp=STAMP))
    [event] = calendar.events

    assert str(calendar["PRODID"]) == PRODID
    assert event["DTSTAMP"].dt == STAMP
    assert str(event["STATUS"]) == "CONFIRMED"
    assert str(event["ORGANIZER"]) == "mailto:dana@acme.com"
    assert [(str(a), dict(a.params)) for a in event.attendees] == [
        (
            f"mailto:{address}",
            {"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "NEEDS-ACTION", "RSVP": "TRUE"},
        )
        for address in KICKOFF.attendees
    ]


def test_building_the_same_request_twice_gives_the_same_text():
    assert build_request(KICKOFF, stamp=STAMP) == build_request(KICKOFF, stamp=STAMP)


def test_a_cancel_keeps_the_uid_raises_the_sequence_and_is_cancelled_for_all_attendees():
    cancel = build_cancel(KICKOFF, stamp=STAMP)

    cancelled = parse_event(cancel)
    assert parse_method(cancel) == "CANCEL"
    assert cancelled.uid == KICKOFF.uid
    assert cancelled.sequence == KICKOFF.sequence + 1
    assert cancelled.status == "CANCELLED"
    assert cancelled.attendees == KICKOFF.attendees
    assert cancelled == replace(KICKOFF, sequence=1, status="CANCELLED")


def test_cancelling_an_event_updated_twice_sends_the_sequence_after_the_last_update():
    updated = replace(KICKOFF, sequence=2)

    assert parse_event(build_cancel(updated)).sequence == 3


def test_the_cancel_email_reaches_every_attendee_with_a_calendar_part_of_method_cancel(
    mail_sink,
):
    cancel = build_cancel(KICKOFF, stamp=STAMP)
    email = invitation_email(
        cancel, "CANCEL", "Dana <dana@acme.com>", list(KICKOFF.attendees), "Cancelled: Kickoff"
    )

    send_message(email, mail_sink.host, mail_sink.port)
    [delivered] = mail_sink.wait_for(1)

    assert delivered.envelope_to == KICKOFF.attendees
    assert delivered.message.get_content_type() == "multipart/alternative"
    assert delivered.calendar_method == "CANCEL"
    [part] = delivered.calendar_parts()
    assert parse_event(part) == parse_event(cancel)
    [calendar_part] = [p for p in delivered.message.walk() if p.get_content_type() == "text/calendar"]
    assert calendar_part.get_param("method") == "CANCEL"
    assert calendar_part.get_content_charset() == "utf-8"
    [text] = [p for p in delivered.message.walk() if p.get_content_type() == "text/plain"]
    assert KICKOFF.summary in text.get_content()


def test_the_request_email_is_multipart_alternative_with_plain_text_and_method_request():
    email = invitation_email(
        build_request(KICKOFF), "request", "dana@acme.com", ["buyer@globex.com"], "Kickoff"
    )

    assert [p.get_content_type() for p in email.iter_parts()] == ["text/plain", "text/calendar"]
    assert email["To"] == "buyer@globex.com"
    [calendar_part] = [p for p in email.iter_parts() if p.get_content_type() == "text/calendar"]
    assert calendar_part.get_param("method") == "REQUEST"


def test_start_and_end_in_another_timezone_are_stored_in_utc():
    new_york = ZoneInfo("America/New_York")
    event = replace(
        KICKOFF,
        start=datetime(2026, 11, 4, 10, 0, tzinfo=new_york),
        end=datetime(2026, 11, 4, 11, 0, tzinfo=new_york),
    )

    assert event.start == START
    assert event.start.tzinfo is UTC
    assert "DTSTART:20261104T150000Z" in build_request(event).splitlines()


@given(
    summary=st.text(st.characters(exclude_categories=["Cs", "Cc"], include_characters="\n\t"), max_size=200)
)
def test_any_summary_text_survives_the_round_trip(summary):
    event = replace(KICKOFF, summary=summary)

    assert parse_event(build_request(event, stamp=STAMP)).summary == summary


def test_a_line_break_in_the_summary_is_escaped_in_the_text_and_read_back_as_a_line_break():
    ics = build_request(replace(KICKOFF, summary="Kickoff\nBring the numbers"), stamp=STAMP)

    assert "SUMMARY:Kickoff\\nBring the numbers" in ics.splitlines()
    assert str(Calendar.from_ical(ics).events[0]["SUMMARY"]) == "Kickoff\nBring the numbers"


@pytest.mark.parametrize("summary", ["Kickoff\r\nwith Globex", "Kickoff\rwith Globex"])
def test_cr_lf_and_cr_in_the_summary_are_read_as_a_line_break(summary):
    event = replace(KICKOFF, summary=summary)

    assert event.summary == "Kickoff\nwith Globex"
    assert parse_event(build_request(event, stamp=STAMP)) == event


def test_a_non_ascii_address_is_written_as_a_percent_encoded_mailto_uri_and_read_back():
    event = replace(KICKOFF, organizer="rené@acme.com", attendees=("zoë@globex.com", "a%b/c@globex.com"))

    calendar = Calendar.from_ical(build_request(event, stamp=STAMP))
    [vevent] = calendar.events

    assert str(vevent["ORGANIZER"]) == "mailto:ren%C3%A9@acme.com"
    assert [str(a) for a in vevent.attendees] == ["mailto:zo%C3%AB@globex.com", "mailto:a%25b%2Fc@globex.com"]
    assert parse_event(build_request(event, stamp=STAMP)) == event


@given(
    local=st.text(
        st.characters(exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp"], exclude_characters='@<>()[],;:"'),
        min_size=1,
        max_size=30,
    )
)
def test_any_attendee_address_is_an_ascii_uri_that_decodes_to_the_address(local):
    event = replace(KICKOFF, attendees=(f"{local}@globex.com",))
    ics = build_request(event, stamp=STAMP)

    [attendee] = Calendar.from_ical(ics).events[0].attendees
    assert str(attendee).isascii()
    assert parse_event(ics).attendees == event.attendees


def unfolded(ics: str) -> str:
    """``ics`` with its long lines unfolded (RFC 5545), so a test can edit a value in one piece."""
    return ics.replace("\r\n ", "")


def test_a_raw_non_ascii_address_stored_by_an_earlier_version_still_reads():
    event = replace(KICKOFF, attendees=("zoë@globex.com",))
    raw = unfolded(build_request(event, stamp=STAMP)).replace("mailto:zo%C3%AB", "mailto:zoë")
    assert "mailto:zoë@globex.com" in raw

    assert parse_event(raw).attendees == ("zoë@globex.com",)


def test_an_address_whose_percent_encoding_is_not_utf8_is_an_invalid_calendar():
    event = replace(KICKOFF, attendees=("zoë@globex.com",))
    broken = unfolded(build_request(event, stamp=STAMP)).replace("mailto:zo%C3%AB", "mailto:zo%C3")
    assert "mailto:zo%C3@globex.com" in broken

    with pytest.raises(InvalidCalendarError) as refused:
        parse_event(broken)

    assert refused.value.code == "INVALID_CALENDAR"


def test_line_breaks_in_an_email_subject_become_spaces():
    email = invitation_email(
        build_request(KICKOFF),
        "REQUEST",
        "dana@acme.com",
        ["buyer@globex.com"],
        "Kickoff\r\n with\u2028Globex\x00",
    )

    assert email["Subject"] == "Kickoff with Globex"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"start": datetime(2026, 11, 4, 15, 0)}, "start"),
        ({"end": datetime(2026, 11, 4, 16, 0)}, "end"),
        ({"end": START - timedelta(minutes=1)}, "end"),
        ({"end": START}, "end"),
        ({"start": date(2026, 11, 4)}, "start"),
        ({"attendees": ("buyer at globex",)}, "attendees"),
        ({"attendees": ("mailto:buyer@globex.com",)}, "attendees"),
        ({"organizer": "Dana"}, "organizer"),
        ({"uid": ""}, "uid"),
        ({"sequence": -1}, "sequence"),
        ({"status": "MAYBE"}, "status"),
        ({"summary": "Kickoff\x00with Globex"}, "summary"),
        ({"summary": "Kickoff\x1bwith Globex"}, "summary"),
        ({"attendees": ("buyer\x07@globex.com",)}, "attendees"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_an_invalid_event_is_refused_with_the_code_and_the_field(changes, field):
    with pytest.raises(InvalidEventError) as refused:
        replace(KICKOFF, **changes)

    assert refused.value.code == "INVALID_EVENT"
    assert refused.value.field == field
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize("build", [build_request, build_cancel])
def test_an_invitation_without_attendees_is_refused(build):
    with pytest.raises(InvalidEventError) as refused:
        build(replace(KICKOFF, attendees=()))

    assert (refused.value.code, refused.value.field) == ("INVALID_EVENT", "attendees")


def test_a_request_for_a_cancelled_event_is_refused():
    with pytest.raises(InvalidEventError) as refused:
        build_request(replace(KICKOFF, status="CANCELLED"))

    assert refused.value.field == "status"


@pytest.mark.parametrize(
    ("method", "to", "field"),
    [
        ("CANCEL", ["buyer@globex.com"], "method"),  # the ics says REQUEST
        ("PUBLISH", ["buyer@globex.com"], "method"),
        ("REQUEST", [], "to"),
        ("REQUEST", ["not an address"], "to"),
    ],
)
def test_an_inconsistent_invitation_email_is_refused_with_the_field(method, to, field):
    with pytest.raises(InvalidEventError) as refused:
        invitation_email(build_request(KICKOFF), method, "dana@acme.com", to, "Kickoff")

    assert (refused.value.code, refused.value.field) == ("INVALID_EVENT", field)


@pytest.mark.parametrize(
    "ics",
    [
        "not a calendar",
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n",
        build_request(KICKOFF).replace(
            "END:VCALENDAR", "BEGIN:VEVENT\r\nUID:x\r\nEND:VEVENT\r\nEND:VCALENDAR"
        ),
        build_request(KICKOFF).replace("DTSTART:20261104T150000Z", "DTSTART:tomorrow"),
    ],
    ids=["garbage", "no-event", "two-events", "broken-start"],
)
def test_text_that_is_not_one_readable_event_is_refused_as_an_invalid_calendar(ics):
    with pytest.raises(InvalidCalendarError) as refused:
        parse_event(ics)

    assert refused.value.code == "INVALID_CALENDAR"


def test_a_floating_start_time_is_refused_when_parsed():
    floating = build_request(KICKOFF).replace("DTSTART:20261104T150000Z", "DTSTART:20261104T150000")

    with pytest.raises(InvalidEventError) as refused:
        parse_event(floating)

    assert refused.value.field == "start"
