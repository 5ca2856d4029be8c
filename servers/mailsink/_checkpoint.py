"""Restarts the sink recognises: the CHECKPOINT extension's ``TRANSID`` (RFC 1845), kept with each
message, so that a sender who lost the ``250`` of a message the sink stored, and sends it again,
gets the first transaction back instead of a second copy.

The sink offers ``CHECKPOINT`` in its EHLO answer and takes ``MAIL FROM:<…> TRANSID=<local@domain>``.
A transaction is named by the client's EHLO name together with its TRANSID, as the RFC says. When a
MAIL names one whose message is stored already, the sink answers ``355 <octets> is the transaction
offset``, the whole message's length (it keeps only complete messages, never part of one); the
client then gives its recipients and ``DATA`` and sends only the final ``.``, and the sink answers
``250`` and stores nothing. A message that arrives in full under a TRANSID stored already (two
senders racing) is answered ``250`` and not stored again either.

The index lives in the sink's process and is read back from the Maildir when a sink starts (the
TRANSID travels in the message's own trace header, ``_maildir.py``), so one sink process per Maildir
is what makes the check complete.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

TRANSID_ATTRIBUTE = "hatp_transaction"
"""Where the MAIL command's transaction (a :class:`Transaction`) is kept on aiosmtpd's envelope."""
RESTART_ATTRIBUTE = "hatp_restart_of"
"""Set on aiosmtpd's envelope when MAIL restarted a transaction whose message is stored already."""

_PART = r"(?:(?![()<>@,;:\\\"/\[\]?=])[!-~])+"
_TRANSID = re.compile(f"<{_PART}@{_PART}>")
"""``<local@domain>``, each part of printable ASCII other than space and MIME's tspecials."""
_MAX_TRANSID = 80
_EHLO_NAME = re.compile(r"[!-~]{1,255}")


def transid_problem(value: str) -> str | None:
    """Why ``value`` is not a TRANSID (RFC 1845: ``<local@domain>``, at most 80 characters), or None."""
    if len(value) > _MAX_TRANSID:
        return "TRANSID must be at most 80 characters (RFC 1845)"
    if not _TRANSID.fullmatch(value):
        return "TRANSID must be <local@domain> without spaces or special characters (RFC 1845)"
    return None


def ehlo_name_usable(name: str | None) -> bool:
    """Whether a client's EHLO name can name its transactions (printable ASCII, no space)."""
    return name is not None and _EHLO_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class Transaction:
    """One client's transaction: its EHLO name and TRANSID, as they came."""

    client: str
    transid: str

    def header_value(self, octets: int) -> str:
        """How the message's trace header keeps it, with the message's length in octets."""
        return f"{self.transid} {octets} {self.client}"

    @classmethod
    def from_header(cls, value: str) -> tuple[Transaction, int] | None:
        """The transaction and length a trace header holds, or None for one the sink did not write."""
        parts = value.strip().split(" ")
        if len(parts) != 3 or not parts[1].isdigit() or transid_problem(parts[0]) is not None:
            return None
        if not ehlo_name_usable(parts[2]):
            return None
        return cls(parts[2], parts[0]), int(parts[1])


class RestartIndex:
    """The transactions whose messages are stored (with their length), and those being stored now.

    Shared by the event loop and the threads that write messages, so every method takes the lock.
    """

    def __init__(self, stored: Iterable[tuple[Transaction, int]] = ()) -> None:
        self._lock = threading.Lock()
        self._stored: dict[Transaction, int] = dict(stored)
        self._storing: dict[Transaction, threading.Event] = {}

    def stored_length(self, transaction: Transaction) -> int | None:
        """The stored message's length if this transaction's message is stored, else None."""
        with self._lock:
            return self._stored.get(transaction)

    def being_stored(self, transaction: Transaction) -> threading.Event | None:
        """An event set once another session's storing of this transaction ends, if one is under way."""
        with self._lock:
            return self._storing.get(transaction)

    def claim(self, transaction: Transaction) -> threading.Event | None:
        """Start storing ``transaction``'s message: None if this session may, else the event to wait
        for (another session is storing it, or it is stored: then an event already set)."""
        with self._lock:
            if transaction in self._stored:
                done = threading.Event()
                done.set()
                return done
            if transaction in self._storing:
                return self._storing[transaction]
            self._storing[transaction] = threading.Event()
            return None

    def finish(self, transaction: Transaction, octets: int | None) -> None:
        """End a claim: stored with ``octets`` octets, or (None) not stored after all."""
        with self._lock:
            if octets is not None:
                self._stored[transaction] = octets
            event = self._storing.pop(transaction, None)
        if event is not None:
            event.set()
