"""Holding a call open while a person decides its ask, with MCP progress notifications.

The host sets ``[recorder] wait_seconds`` (the default wait) and ``max_wait_seconds`` (the cap);
an agent may ask for its own wait with ``_meta["hatp/wait"]`` (seconds). A wait above the cap is
cut to the cap and the answer says so (``_meta["hatp/recorder"]["wait"]``). While the call waits
the Recorder re-reads the ask a few times a second and, when the call carried a
``progressToken``, sends a progress notification about once a second. A decision ends the wait:
the call is forwarded or refused as if the agent had called again; at the end of the wait it is
answered pending, as without waiting.

The notifications say that a person's approval is awaited, not whose: who approves is the
organisation's policy, never shown to the agent. The approval itself is only ever taken signed,
from the approver (``hatp-recorder approve``, the web approver), never through the agent's client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

WAIT_META = "hatp/wait"
"""Where a call asks to wait: ``_meta["hatp/wait"]``, seconds."""
POLL_SECONDS = 0.2
"""How often a waiting call re-reads its ask: a decision is acted on within this (plus the call)."""
PROGRESS_SECONDS = 1.0
"""How often a waiting call tells the client it is still waiting."""

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one progress notification: (progress, total, message)."""


@dataclass(frozen=True)
class Wait:
    """How long one call waits, and what the agent asked for when that is not what it gets."""

    seconds: float
    asked: Any = None  # what ``_meta["hatp/wait"]`` said, when it was capped or ignored
    why: str | None = None  # "capped" or "ignored"

    def said(self) -> dict[str, Any] | None:
        """What the answer tells the agent about its wait (None: waited as asked, or no wait asked)."""
        if self.why is None:
            return None
        return {"seconds": self.seconds, "asked": self.asked, self.why: True}


def wait_of(meta: Any, default: float, maximum: float) -> Wait:
    """The wait of a call whose request ``_meta`` is ``meta``."""
    asked = meta.get(WAIT_META) if isinstance(meta, dict) else None
    if asked is None:
        return Wait(default)
    if isinstance(asked, bool) or not isinstance(asked, int | float) or not asked >= 0:
        return Wait(default, asked if isinstance(asked, int | float | str) else None, "ignored")
    if asked > maximum:
        return Wait(maximum, asked, "capped")
    return Wait(float(asked))


async def wait_for_decision(state: Callable[[], str], wait: Wait, progress: Progress | None, ask: str) -> str:
    """Re-read ``state()`` until it is no longer ``"pending"`` or ``wait`` is over; the last state.

    Elapsed time is the event loop's clock (monotonic), so a changed wall clock changes nothing.
    """
    started = anyio.current_time()
    told = None
    while True:
        now = anyio.current_time() - started
        found = state()
        if found != "pending" or now >= wait.seconds:
            return found
        if progress is not None and (told is None or now - told >= PROGRESS_SECONDS):
            told = now
            await progress(round(now, 1), wait.seconds, f"Waiting for a person's approval ({ask}).")
        await anyio.sleep(min(POLL_SECONDS, wait.seconds - now))
