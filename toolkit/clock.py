"""Time on the wire: UTC, second precision, ``Z`` suffix."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def wire_time(moment: datetime) -> str:
    """Format ``moment`` as on the wire; equal-width strings compare like the times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_wire_time(text: str) -> datetime:
    """Inverse of :func:`wire_time`."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
