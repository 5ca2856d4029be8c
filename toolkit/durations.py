"""Undo windows: ISO-8601 durations (days and smaller) or plain seconds."""

from __future__ import annotations

import re
from datetime import timedelta

_ISO = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)


def parse_window(value: str | int | float | timedelta) -> timedelta:
    """Parse a window such as ``"P7D"``, ``"PT36H"``, ``86400`` or a ``timedelta``.

    Years and months are refused: their length depends on the calendar, and an
    undo deadline must be exact.
    """
    if isinstance(value, timedelta):
        window = value
    elif isinstance(value, bool):
        raise ValueError(f"window must be a duration, not {value!r}")
    elif isinstance(value, int | float):
        window = timedelta(seconds=value)
    else:
        match = _ISO.match(value)
        if match is None or value in ("P", "PT") or value.endswith("T"):
            raise ValueError(
                f"window {value!r} is not an ISO-8601 duration in weeks, days, hours, "
                "minutes or seconds (e.g. 'P7D', 'PT36H') nor a number of seconds"
            )
        parts = {name: int(amount) for name, amount in match.groupdict().items() if amount}
        window = timedelta(**parts)
    if window <= timedelta(0):
        raise ValueError(f"window must be positive, got {value!r}")
    return window


def format_window(window: timedelta) -> str:
    """Format a positive ``timedelta`` as the shortest ISO-8601 duration."""
    total = int(window.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    time = "".join(
        f"{amount}{unit}" for amount, unit in ((hours, "H"), (minutes, "M"), (seconds, "S")) if amount
    )
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")
