"""Testing only: kill this process at a named point, to test what survives a crash.

With ``HATP_JOURNAL_TESTING=1`` and ``HATP_JOURNAL_CRASH_AT=NAME`` (or ``NAME#N``: the N-th time
that point is reached, counting from 1), the process sends itself SIGKILL when it reaches
:func:`crash_point` ``(NAME)``: no cleanup, no flush, open connections dropped by the kernel — as a
``kill -9`` from outside would, but at an exact place. Without testing mode nothing ever happens.

The points are listed in :data:`CRASH_POINTS`, documented where they are placed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

from hatp_journal._shared.testing_env import surface_requested

CRASH_ENV = "HATP_JOURNAL_CRASH_AT"

CRASH_POINTS = (
    # servers/outbox.py, in the tool server:
    "outbox:staged",  # each notice, in the transaction: probed over SMTP (nothing sent), row added
    "outbox:committed",  # each batch (a call's notices): committed, no courier told yet
    "outbox:courier-started",  # each batch, courier "process": a live courier holds the lease
    # servers/courier.py, in the courier (or the server, courier "inline"), for each notice:
    "courier:delivered",  # the SMTP server answered 250; the staged sent mark not committed yet
    "courier:marked",  # marked sent
    # recorder/runs/notice_mail.py, for every review, reminder or escalation mail:
    "reminders:mailed",  # the SMTP server accepted the mail; its mail-delivered entry not yet appended
    # recorder/gateway/core.py, for an approved call (an ask) or any call journaled with its answer:
    "gateway:claimed",  # the approved ask is claimed in the store; its call not sent
    "gateway:sent",  # the claim says the call is sent; the server not yet asked
    "gateway:answered",  # the call's entry and its answer are durable; the agent has not got it
)

_reached: Counter[str] = Counter()
_lock = threading.Lock()


def crash_point(name: str) -> None:
    """SIGKILL this process if the environment asks for a crash here (testing mode only)."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted or not surface_requested():
        return
    point, _, nth = wanted.partition("#")
    if point != name:
        return
    with _lock:
        _reached[name] += 1
        count = _reached[name]
    if count == (int(nth) if nth else 1):
        os.kill(os.getpid(), signal.SIGKILL)
