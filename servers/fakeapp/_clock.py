"""The app's clock: real time until a test sets or moves it, so tests never sleep."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    """Wall-clock time that tests can shift or stop.

    ``advance`` shifts the clock and keeps it running (or stopped, if it was); ``set`` stops it
    at the given moment, so boundaries such as "exactly 30 days in Trash" can be tested exactly.
    Trash retention reads this clock.
    """

    def __init__(self) -> None:
        self._offset = timedelta()
        self._frozen: datetime | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The app's current time (timezone-aware, UTC)."""
        with self._lock:
            return self._now()

    def advance(self, *, days: float) -> datetime:
        """Move the clock forward (or back, with a negative value) and return the new time."""
        step = timedelta(days=days)
        with self._lock:
            if self._frozen is not None:
                self._frozen += step
            else:
                self._offset += step
            return self._now()

    def set(self, now: datetime) -> None:
        """Stop the clock at ``now``; a naive datetime is taken as UTC."""
        with self._lock:
            self._frozen = now if now.tzinfo is not None else now.replace(tzinfo=UTC)

    def reset(self) -> None:
        """Back to real time, running."""
        with self._lock:
            self._offset = timedelta()
            self._frozen = None

    def _now(self) -> datetime:
        if self._frozen is not None:
            return self._frozen.astimezone(UTC)
        return datetime.now(UTC) + self._offset
