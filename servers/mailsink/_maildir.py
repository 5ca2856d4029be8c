"""Durable Maildir delivery and reading, with the SMTP envelope kept in the message.

The envelope travels as two trace headers that the sink *prepends* on receipt, the way MTAs prepend
``Return-Path``/``Delivered-To``::

    X-Envelope-From: <dana@acme.com>
    X-Envelope-To: <buyer@globex.com>,
     <eve@acme.com>

Only the topmost occurrence of each is the sink's; any further down came inside the message and is
ignored, so a sender cannot forge its own envelope. A sender's DSN envelope identifier (``MAIL
FROM:<…> ENVID=…``, RFC 3461) is kept as a third, first of all, and only there::

    X-Envelope-Id: ntc_3f9a…

and, for a sender that named its transaction (``TRANSID``, RFC 1845; see ``_checkpoint.py``), the
TRANSID, the message's length in octets and the sender's EHLO name, before the two envelope headers::

    X-Envelope-Transid: <ntc_3f9a…@courier.acme.com> 1423 courier.acme.com

Two copies of one Message-ID delivered to one recipient are a resend (:func:`resent`): the sender
lost the ``250`` of the first (RFC 1047) and sent it again.
"""

from __future__ import annotations

import email
import email.policy
import itertools
import mailbox
import os
import re
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

ENVELOPE_FROM = "X-Envelope-From"
ENVELOPE_TO = "X-Envelope-To"
ENVELOPE_ID = "X-Envelope-Id"
ENVELOPE_TRANSID = "X-Envelope-Transid"

_ADDRESS = re.compile(r"<([^<>]*)>")
# Zero-padded so that sorting keys as strings sorts deliveries by time, then by order within one
# process (stdlib Maildir keys are not zero-padded and do not sort).
_counter = itertools.count()
_HOST = socket.gethostname().replace("/", r"\057").replace(":", r"\072")


@dataclass(frozen=True)
class DeliveredMessage:
    """One message as the sink stored it: its Maildir key, SMTP envelope and parsed content."""

    key: str
    envelope_from: str
    envelope_to: tuple[str, ...]
    subject: str
    message: EmailMessage = field(compare=False)
    raw: bytes = field(repr=False, compare=False)
    envelope_id: str | None = None
    """The sender's ``ENVID`` (xtext, as it came), if it gave one."""

    @property
    def message_id(self) -> str | None:
        """The message's own Message-ID header, if it has one."""
        found = self.message.get("Message-ID")
        return str(found).strip() if found is not None else None

    def calendar_parts(self) -> list[str]:
        """The iCalendar text of every ``text/calendar`` part, in message order."""
        return [str(part.get_content()) for part in self._calendar_mime_parts()]

    @property
    def calendar_method(self) -> str | None:
        """The iMIP ``method`` of the first ``text/calendar`` part (upper case), if any."""
        for part in self._calendar_mime_parts():
            method = part.get_param("method")
            if isinstance(method, str):
                return method.upper()
        return None

    def _calendar_mime_parts(self) -> list[EmailMessage]:
        return [part for part in self.message.walk() if part.get_content_type() == "text/calendar"]


def ensure_maildir(directory: Path) -> None:
    """Create ``directory`` as an empty Maildir (with ``tmp/``, ``new/``, ``cur/``) if needed.

    A folder that exists already (made empty beforehand, as a deployment does) gets the three
    subfolders it lacks: ``mailbox.Maildir`` makes them only when it makes the folder itself.
    """
    mailbox.Maildir(directory, create=True)
    for part in ("tmp", "new", "cur"):
        (directory / part).mkdir(exist_ok=True)


@dataclass(frozen=True)
class Resend:
    """One Message-ID delivered to one recipient more than once: which stored messages (numbered
    from 1 in delivery order, as ``hatp-mailsink list`` numbers them) and their ENVIDs."""

    message_id: str
    recipient: str
    numbers: tuple[int, ...]
    envelope_ids: tuple[str | None, ...]


def resent(messages: Sequence[DeliveredMessage]) -> list[Resend]:
    """The resends among ``messages`` (in delivery order): each Message-ID that reached one
    envelope recipient more than once. Messages without a Message-ID are never counted."""
    copies: dict[tuple[str, str], list[int]] = {}
    for number, delivered in enumerate(messages, start=1):
        if delivered.message_id is None:
            continue
        for recipient in dict.fromkeys(address.lower() for address in delivered.envelope_to):
            copies.setdefault((delivered.message_id, recipient), []).append(number)
    return [
        Resend(message_id, recipient, tuple(numbers), tuple(messages[n - 1].envelope_id for n in numbers))
        for (message_id, recipient), numbers in copies.items()
        if len(numbers) > 1
    ]


def deliver(
    directory: Path,
    envelope_from: str,
    envelope_to: Sequence[str],
    data: bytes,
    envelope_id: str | None = None,
    transaction: str | None = None,
) -> str:
    """Store one message durably in the Maildir and return its key (``envelope_id``: the sender's
    ENVID, xtext; ``transaction``: its TRANSID header value, see ``_checkpoint.py``).

    Follows the Maildir protocol (write to ``tmp/``, then rename into ``new/``) and fsyncs the file
    and the directory, so a message the sink acknowledged survives a crash of the machine.
    """
    key = f"{time.time_ns():020d}.{next(_counter):08d}.P{os.getpid()}.{_HOST}"
    tmp_path = directory / "tmp" / key
    new_path = directory / "new" / key
    with tmp_path.open("xb") as out:
        out.write(_envelope_headers(envelope_from, envelope_to, envelope_id, transaction))
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.rename(tmp_path, new_path)
    _fsync_directory(new_path.parent)
    return key


def read_maildir(directory: Path) -> list[DeliveredMessage]:
    """Read every message in a Maildir, in delivery order, without a running server.

    Raises ``FileNotFoundError`` if ``directory`` is not a Maildir.
    """
    directory = Path(directory)
    if not ((directory / "new").is_dir() and (directory / "cur").is_dir()):
        raise FileNotFoundError(f"{directory} is not a Maildir (it has no new/ and cur/)")
    box = mailbox.Maildir(directory, create=False)
    return [_parse(key, box.get_bytes(key)) for key in sorted(box.keys())]


def count_messages(directory: Path) -> int:
    """How many messages the Maildir holds (cheaper than parsing them)."""
    return sum(1 for sub in ("new", "cur") for _ in (directory / sub).iterdir())


def sink_headers(directory: Path) -> list[dict[str, str]]:
    """For every message in the Maildir, the trace headers the sink wrote on top of it (name in
    lower case: value): those before its ``X-Envelope-From``, which it always writes. Reads only the
    start of each file."""
    found = []
    for path in (path for sub in ("new", "cur") for path in (directory / sub).iterdir()):
        with path.open("rb") as stored:
            head = stored.read(4096)
        headers: dict[str, str] = {}
        for line in head.split(b"\r\n"):
            name, colon, value = line.decode("utf-8", "replace").partition(":")
            if not colon or name.lower() == ENVELOPE_FROM.lower():
                break
            headers[name.lower()] = value.strip()
        found.append(headers)
    return found


def _envelope_headers(
    envelope_from: str, envelope_to: Sequence[str], envelope_id: str | None, transaction: str | None
) -> bytes:
    # One recipient per folded line keeps each header line short for long recipient lists.
    recipients = ",\r\n ".join(f"<{address}>" for address in envelope_to)
    text = f"{ENVELOPE_FROM}: <{envelope_from}>\r\n{ENVELOPE_TO}: {recipients}\r\n"
    if transaction is not None:  # before X-Envelope-From, so only the sink's counts
        text = f"{ENVELOPE_TRANSID}: {transaction}\r\n{text}"
    if envelope_id is not None:  # xtext: printable ASCII, no space; first, so only the sink's counts
        text = f"{ENVELOPE_ID}: {envelope_id}\r\n{text}"
    # SMTPUTF8 allows non-ASCII addresses; RFC 6532 carries them in headers as UTF-8.
    return text.encode("utf-8")


def _parse(key: str, raw: bytes) -> DeliveredMessage:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)  # guaranteed by policy=default
    senders = _addresses(message, ENVELOPE_FROM)
    return DeliveredMessage(
        key=key,
        envelope_from=senders[0] if senders else "",
        envelope_to=tuple(_addresses(message, ENVELOPE_TO)),
        subject=str(message.get("Subject", "")),
        message=message,
        raw=raw,
        envelope_id=_envelope_id(message),
    )


def _envelope_id(message: EmailMessage) -> str | None:
    # The sink writes it as the very first header, or not at all: one further down is the sender's.
    names = message.keys()
    return str(message[ENVELOPE_ID]).strip() if names and names[0].lower() == ENVELOPE_ID.lower() else None


def _addresses(message: EmailMessage, header: str) -> list[str]:
    values = message.get_all(header) or []
    return _ADDRESS.findall(str(values[0])) if values else []


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
