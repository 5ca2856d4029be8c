"""Undo windows: ISO-8601 durations (days and smaller) or plain seconds."""

from __future__ import annotations

import math
import re
from datetime import timedelta

_ISO = re.compile(
    r"P(?:(?P<weeks>[0-9]+)W)?(?:(?P<days>[0-9]+)D)?"
    r"(?:T(?:(?P<hours>[0-9]+)H)?(?:(?P<minutes>[0-9]+)M)?(?:(?P<seconds>[0-9]+)S)?)?"
)
"""Matched whole (``fullmatch``): ``$`` would let a trailing newline through, ``\\d`` any script's digits."""

MAX_WINDOW = timedelta(days=36_500)
"""The longest window anything takes (``P36500D``, about 100 years): a time that far ahead still
adds to any date of this millennium without overflowing, and no undo waits longer."""

MAX_WINDOW_SECONDS = 36_500 * 86_400
""":data:`MAX_WINDOW` in seconds (3,153,600,000): the bound of every ``…Seconds`` setting."""

_MAX_DIGITS = 20
"""More digits than any amount within :data:`MAX_WINDOW` in any unit: refused before ``int()``
(which raises past 4,300 digits) or ``timedelta`` (which overflows) sees it."""


def parse_window(value: str | int | float | timedelta) -> timedelta:
    """Parse a window such as ``"P7D"``, ``"PT36H"``, ``86400`` or a ``timedelta``.

    Years and months are refused: their length depends on the calendar, and an
    undo deadline must be exact. So is anything longer than :data:`MAX_WINDOW`: every
    refusal is a ``ValueError``, never an ``OverflowError``.
    """
    if isinstance(value, timedelta):
        window = value
    elif isinstance(value, bool):
        raise ValueError(f"window must be a duration, not {value!r}")
    elif isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"window must be a finite number of seconds, not {value!r}")
        if abs(value) > MAX_WINDOW_SECONDS:
            raise ValueError(_too_long(value))
        window = timedelta(seconds=value)
    else:
        match = _ISO.fullmatch(value)
        if match is None or value in ("P", "PT") or value.endswith("T"):
            raise ValueError(
                f"window {_shown(value)} is not an ISO-8601 duration in weeks, days, hours, "
                "minutes or seconds (e.g. 'P7D', 'PT36H') nor a number of seconds"
            )
        amounts = {name: amount for name, amount in match.groupdict().items() if amount}
        if any(len(amount) > _MAX_DIGITS for amount in amounts.values()):
            raise ValueError(_too_long(value))
        try:
            window = timedelta(**{name: int(amount) for name, amount in amounts.items()})
        except OverflowError:
            raise ValueError(_too_long(value)) from None
    if window <= timedelta(0):
        raise ValueError(f"window must be positive, got {_shown(value)}")
    if window > MAX_WINDOW:
        raise ValueError(_too_long(value))
    return window


def _too_long(value: object) -> str:
    return f"window {_shown(value)} is longer than the longest window, P36500D ({MAX_WINDOW_SECONDS} seconds)"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}… ({len(text)} characters)"


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
