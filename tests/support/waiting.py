"""``wait_until``: the one way a test waits for something to happen in another thread or process.

It waits on progress (the condition itself, and whether the thing that would make it true is still
alive), never on a wall-clock deadline: a loaded machine only makes a test slower. The safety cap
is there so a test that hangs still ends and says what it waited for; it is not a timing claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio

T = TypeVar("T")

SAFETY_CAP_SECONDS = 300.0
"""Only a hung test ever reaches this."""


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    *,
    alive: Callable[[], bool] | None = None,
    every: float = 0.01,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that. ``alive`` says whether
    whatever should bring it about still runs (a process, a thread); once it says no, waiting stops
    with an AssertionError naming ``what``, as it does at the safety cap."""
    started = time.monotonic()
    while True:
        found = condition()
        if found:
            return found
        if alive is not None and not alive():
            found = condition()  # it may have happened just before the end
            if found:
                return found
            raise AssertionError(f"it ended before {what}")
        if time.monotonic() - started > SAFETY_CAP_SECONDS:
            raise AssertionError(f"still waiting for {what} after {SAFETY_CAP_SECONDS:g} s")
        time.sleep(every)


POLL_CAP = 30_000
"""How many times :func:`poll` looks before it gives up (a few minutes at 10 ms apart): only a hung
test ever reaches it."""


async def poll(
    condition: Callable[[], T | None],
    what: str,
    *,
    alive: Callable[[], bool] | None = None,
    every: float = 0.01,
    cap: int = POLL_CAP,
) -> T:
    """:func:`wait_until` for async code: look at ``condition`` until it holds, at most ``cap`` times;
    stop with an AssertionError naming ``what`` once ``alive`` says the thing that would bring it
    about has ended, or at the cap. The event loop runs between looks."""
    for _ in range(cap):
        found = condition()
        if found:
            return found
        if alive is not None and not alive():
            found = condition()  # it may have happened just before the end
            if found:
                return found
            raise AssertionError(f"it ended before {what}")
        await anyio.sleep(every)
    raise AssertionError(f"still waiting for {what} after looking {cap} times")


class _Settable(Protocol):
    async def wait(self) -> Any: ...


async def until_set(event: _Settable, what: str, *, cap: float = SAFETY_CAP_SECONDS) -> None:
    """Wait for ``event`` (anyio's or asyncio's) to be set. It is set by progress; only a hung test
    reaches ``cap``, and then it stops with an AssertionError naming ``what``."""
    with anyio.move_on_after(cap):
        await event.wait()
        return
    raise AssertionError(f"still waiting for {what} after {cap:g} s")
