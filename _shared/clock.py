"""Time on the wire: UTC, second precision, ``Z`` suffix."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def wire_time(moment: datetime) -> str:
    """Format ``moment`` as on the wire; equal-width strings compare like the times."""
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    if utc.year < 1000:  # strftime writes these years unpadded: keep its spelling
        return utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    # The same text as strftime, in a fraction of its time (every Run Record entry writes one).
    return f"{utc.year}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"


def parse_wire_time(text: str) -> datetime:
    """Inverse of :func:`wire_time`."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
