"""The one way a Run Record writes a time: UTC, to the second, ``YYYY-MM-DDTHH:MM:SSZ``."""

from __future__ import annotations

import re
from datetime import datetime

# ASCII digits only, and the whole string: ``$`` would let a trailing line break through.
_WIRE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def is_wire_time(value: object) -> bool:
    """Whether ``value`` is a real time written that way (no offsets, fractions or leap seconds)."""
    if not isinstance(value, str) or not _WIRE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value[:-1])  # the shape is fixed above; this refuses 24:00, 23:59:60, Feb 30
    except ValueError:
        return False
    return True
