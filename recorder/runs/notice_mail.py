"""The notices' outbox and courier: a review, reminder or escalation is queued by its own entry and
delivered by ``tick``, with retries, and the record says what became of each mail.

The notice's entry is the queued mail: it holds the addresses (``mailTo``), the Message-ID, the
subject and the text, so queueing a mail and deciding its notice are one append, one transaction.
Each delivery attempt ends in one entry naming the notice: ``mail-delivered`` (the SMTP server
answered 250), ``mail-deferred`` (a 4xx or no server: tried again from its ``retryAt``, after
:data:`RETRY_AFTER_SECONDS`) or ``mail-failed`` (refused for good, a mail that can't be built, or
the last of :data:`MAIL_ATTEMPTS` failed). A notice is "sent" only once its ``mail-delivered`` is
in the record. A tick killed between the server's 250 and that entry (crash point
``reminders:mailed``) sends the mail again on the next tick with the same Message-ID, so the
receiver can tell the copies apart; none is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, get_args

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal._shared.crashpoints import crash_point
from hatp_journal._shared.mail import MailDeliveryError
from hatp_journal.recorder.config import MailSection
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.recorder.record.entry_bodies import (
    MailBody,
    MailDeliveredBody,
    NoticeBody,
    read_as,
    read_body,
)
from hatp_journal.recorder.record.kinds import MailKind, NoticeKind
from hatp_journal.recorder.record.written_bodies import (
    MailDeferredRecord,
    MailDeliveredRecord,
    MailFailedRecord,
)

MAILED_KINDS: Final[tuple[NoticeKind, ...]] = ("review", "reminder", "escalation")
MAIL_OUTCOMES: Final[tuple[MailKind, ...]] = get_args(MailKind)

MAIL_ATTEMPTS = 5
"""Attempts per mail before it is recorded as ``mail-failed``."""
RETRY_AFTER_SECONDS = (60, 120, 300, 600)
"""The wait after the 1st, 2nd, … failed attempt that may pass (the last one repeats)."""

MAIL_DEFERRED = "MAIL_DEFERRED"
MAIL_FAILED = "MAIL_FAILED"
MAIL_UNSENDABLE = "MAIL_UNSENDABLE"
"""The mail could not even be built (a header the email library refuses): never sendable."""
MAIL_NOT_CONFIGURED = "MAIL_NOT_CONFIGURED"
"""A queued mail met a configuration without ``[mail] smtp_port``."""

Send = Callable[[MailSection, list[str], str, str, str], None]
"""Sends one mail: (mail section, addresses, subject, text, Message-ID); raises on failure."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueuedMail:
    """A notice's mail not delivered (nor given up) yet."""

    run: str
    notice: str
    kind: str
    to: list[str]
    message_id: str
    subject: str
    text: str
    attempts: int = 0
    retry_at: str | None = None

    def due(self, now: datetime) -> bool:
        """Whether an attempt is due at ``now`` (at once, or from the last deferral's ``retryAt``)."""
        try:
            return self.retry_at is None or parse_wire_time(self.retry_at) <= now
        except ValueError:
            return True  # a retryAt nobody can read: try now rather than never


@dataclass
class Delivery:
    """What one courier pass appended, and one line per mail that did not go (with its code)."""

    entries: list[Entry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def queued_mail(entries: Sequence[Entry]) -> list[QueuedMail]:
    """The run's notices whose mail is queued and neither delivered nor given up, oldest first.

    A notice written before the queue (``mailedTo``, no ``subject``) was sent or failed then: not queued.
    """
    attempts: dict[str, int] = {}
    retry_at: dict[str, str] = {}
    finished: set[str] = set()
    for entry in entries:
        outcome = read_as(MailBody, entry) if entry.kind in MAIL_OUTCOMES else None
        if not isinstance(outcome, MailBody):
            continue  # not an outcome, or one naming no notice (an edited store): nothing to count
        if entry.kind == "mail-deferred":
            attempts[outcome.notice] = attempts.get(outcome.notice, 0) + 1
            retry_at[outcome.notice] = outcome.retry_at or entry.time
        else:
            finished.add(outcome.notice)
    queued: list[QueuedMail] = []
    for entry in entries:
        notice = read_as(NoticeBody, entry) if entry.kind in MAILED_KINDS else None
        if not isinstance(notice, NoticeBody) or entry.id in finished:
            continue
        to, message_id, subject, text = notice.mail_to, notice.message_id, notice.subject, notice.text
        if not to or message_id is None or subject is None or text is None:
            continue
        queued.append(
            QueuedMail(
                entry.run,
                entry.id,
                entry.kind,
                list(to),
                message_id,
                subject,
                text,
                attempts.get(entry.id, 0),
                retry_at.get(entry.id),
            )
        )
    return queued


def delivered_to(entries: Sequence[Entry]) -> dict[str, list[str]]:
    """Notice entry id → the addresses its mail reached (``mail-delivered``; before the queue, a
    notice's ``mailedTo`` with no ``mail-failed`` after it)."""
    read = [(entry, read_body(entry)) for entry in entries]
    failed = {
        body.notice for entry, body in read if entry.kind == "mail-failed" and isinstance(body, MailBody)
    }
    reached: dict[str, list[str]] = {}
    for entry, body in read:
        if isinstance(body, MailDeliveredBody):
            reached[body.notice] = list(body.to or [])
        elif isinstance(body, NoticeBody) and body.mailed_to and entry.id not in failed:
            reached[entry.id] = list(body.mailed_to)
    return reached


def deliver(
    store: RunStore, mails: Sequence[QueuedMail], mail: MailSection, now: datetime, send: Send
) -> Delivery:
    """Try each mail due at ``now`` once; each attempt's outcome is appended to its run.

    One mail's failure, of whatever kind, never stops the others.
    """
    done = Delivery()
    for queued in mails:
        if not queued.due(now):
            continue
        try:
            entry, problem = _attempt(store, queued, mail, now, send)
        except Exception as error:  # noqa: BLE001 -- the record itself refused: log it, go on
            _log.warning(
                "%s: %s/%s: %s: %s",
                MAIL_FAILED,
                queued.run,
                queued.notice,
                type(error).__name__,
                error,
                extra={"code": MAIL_FAILED, "run": queued.run},
            )
            done.problems.append(f"{MAIL_FAILED}: {queued.run}/{queued.notice} {queued.kind}: {error}")
            continue
        done.entries.append(entry)
        if problem:
            done.problems.append(problem)
    return done


def retry_after(attempt: int) -> timedelta:
    """The wait after failed attempt number ``attempt`` (1-based)."""
    return timedelta(seconds=RETRY_AFTER_SECONDS[min(attempt, len(RETRY_AFTER_SECONDS)) - 1])


def _attempt(
    store: RunStore, queued: QueuedMail, mail: MailSection, now: datetime, send: Send
) -> tuple[Entry, str | None]:
    """One attempt: the entry it ends in, and the problem line if the mail did not go."""
    attempt = queued.attempts + 1
    at = wire_time(now)
    where = f"{queued.run}/{queued.notice} {queued.kind}"
    code, temporary = MAIL_FAILED, False
    try:
        if mail.smtp_port is None:
            code, reason = MAIL_NOT_CONFIGURED, "no [mail] smtp_port is configured"
        else:
            send(mail, queued.to, queued.subject, queued.text, queued.message_id)
            crash_point("reminders:mailed")
            delivered = MailDeliveredRecord(
                notice=queued.notice, to=queued.to, message_id=queued.message_id, attempts=attempt, at=at
            )
            return store.append(queued.run, "mail-delivered", delivered.wire()), None
    except MailDeliveryError as error:
        code, temporary, reason = error.code, error.temporary, str(error)
    except (ValueError, TypeError, UnicodeError) as error:  # the mail can't be built: never sendable
        code, reason = MAIL_UNSENDABLE, f"{type(error).__name__}: {error}"
    if temporary and attempt < MAIL_ATTEMPTS:
        retry_at = wire_time(now + retry_after(attempt))
        deferred = MailDeferredRecord(
            notice=queued.notice, code=code, error=reason, attempt=attempt, at=at, retry_at=retry_at
        )
        entry = store.append(queued.run, "mail-deferred", deferred.wire())
        tried = f"attempt {attempt} of {MAIL_ATTEMPTS}; next at {retry_at}"
        return entry, f"{MAIL_DEFERRED}: {where}: {reason} ({tried})"
    failed = MailFailedRecord(notice=queued.notice, error=reason, at=at, code=code, attempts=attempt)
    entry = store.append(queued.run, "mail-failed", failed.wire())
    return entry, f"{MAIL_FAILED}: {where}: {reason}"
