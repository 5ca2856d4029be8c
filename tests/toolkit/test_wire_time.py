"""The wire's time text is what ``strftime`` wrote before it was made fast, for every moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from hatp_journal._shared.clock import parse_wire_time, wire_time

ZONES = st.one_of(
    st.just(UTC),
    st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda minutes: timezone(timedelta(minutes=minutes))),
)
MOMENTS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES)


@settings(max_examples=200)
@given(MOMENTS)
def test_wire_time_writes_what_strftime_writes_in_any_zone_and_year(moment: datetime) -> None:
    assert wire_time(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_wire_time_reads_back_to_the_second() -> None:
    moment = datetime(2026, 12, 3, 14, 5, 9, 999_999, tzinfo=UTC)
    assert wire_time(moment) == "2026-12-03T14:05:09Z"
    assert parse_wire_time(wire_time(moment)) == moment.replace(microsecond=0)
