"""Review and reminders (protocol.md §12): a countdown, not a log.

``tick(now)`` looks at every run and does what is due, once: the principal gets the review of a
closed run by mail (with a link to its page); a reminder goes out before **every** open undo window
closes (lead time from the policy's ``review.remindBeforeSeconds``); if nobody has looked at the run
by ``review.escalateBeforeSeconds`` before it closes, the holders of ``review.escalateTo`` are told;
a window that closed is recorded as a ``lapse``, ``after: "escalation"`` or ``after: "quiet"``.

Each notice is an entry in the Run Record, and the entry of a notice that is mailed is its queued
mail (:mod:`hatp_journal.recorder.runs.notice_mail`): it holds the addresses (``mailTo``), a stable
Message-ID made from the run, the kind and the step (``<reminder.e2.run_…@acme.com>``), the subject
and the text. The same tick then delivers it, and every later tick retries what is still queued; each
attempt ends in a ``mail-delivered``, ``mail-deferred`` or ``mail-failed`` entry naming the notice.
So a second tick finds the notice and queues nothing twice, a mail the server turns away for now is
tried again with backoff, and the record calls a notice sent only once the server accepted it.
Looking at a run's review page appends a ``seen`` entry, which is what "somebody has looked" means.
A failure in one run (a record that can't be read, a notice that can't be recorded, a mail that
can't be built or sent) is logged or recorded for that run, and every other run goes on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, get_args

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal._shared.mail import compose, send_message
from hatp_journal.recorder.changes.steps import Step, steps_of
from hatp_journal.recorder.config import MailSection
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, Run, RunStore
from hatp_journal.recorder.record.entry_bodies import BodyModel, NoticeBody, read_as, reversed_entries
from hatp_journal.recorder.record.kinds import NoticeKind
from hatp_journal.recorder.record.written_bodies import NoticeRecord, SeenRecord
from hatp_journal.recorder.runs.fleet_lease import TICK_LEASE, TICK_LEASE_TTL, fleet_lease
from hatp_journal.recorder.runs.notice_mail import QueuedMail, deliver, delivered_to, queued_mail
from hatp_journal.recorder.runs.walk import RUN_UNREADABLE

NOTICE_KINDS: Final[tuple[NoticeKind, ...]] = get_args(NoticeKind)
NOTICE_FAILED = "NOTICE_FAILED"
"""Logged (as ``code``) by ``tick`` for a notice it could not record; the other notices go on."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """One thing due: the entry to append and the mail to send (if anyone has an address)."""

    run: str
    kind: NoticeKind
    body: NoticeRecord
    to: list[str]
    subject: str
    text: str


def due(store: RunStore, policy: Policy, directory: Directory, now: datetime, base_url: str) -> list[Notice]:
    """Everything due at ``now`` that the record does not already hold.

    Runs are looked at one by one: a run whose record can't be read at all is skipped and logged
    (``RUN_UNREADABLE``), and every other run still gets its notices.
    """
    return _scan(store, policy, directory, now, base_url)[0]


def _scan(
    store: RunStore, policy: Policy, directory: Directory, now: datetime, base_url: str
) -> tuple[list[Notice], list[QueuedMail]]:
    """The notices due at ``now``, and the mail already queued and not yet delivered or given up."""
    notices: list[Notice] = []
    queued: list[QueuedMail] = []
    for run in store.runs():
        if run.closed_at is None:
            continue
        try:
            entries = store.entries(run.id)
            found = _due_in_run(entries, run, policy, directory, now, base_url)
            queued += queued_mail(entries)
        except Exception as error:  # noqa: BLE001 -- one run's record never stops another run's reminders
            _log.warning(
                "%s: run %s skipped: %s: %s",
                RUN_UNREADABLE,
                run.id,
                type(error).__name__,
                error,
                extra={"code": RUN_UNREADABLE, "run": run.id},
            )
            continue
        notices += found
    return notices, queued


def _due_in_run(
    entries: list[Entry], run: Run, policy: Policy, directory: Directory, now: datetime, base_url: str
) -> list[Notice]:
    """What is due for one closed run."""
    notices: list[Notice] = []
    if not entries:
        return notices  # a run nobody called in (made by an older Recorder at its start): nothing to review
    rules = policy.review
    escalate_to = rules.escalate_to or policy.undo_authority
    done = {(e.kind, _notice_step(e)) for e in entries if e.kind in NOTICE_KINDS}
    reached = delivered_to(entries)
    link = f"{base_url.rstrip('/')}/runs/{run.id}"
    principal = [run.principal]
    windows = _open_windows(entries)
    if ("review", None) not in done:
        notices.append(_review(run, windows, link, now))
    for step in windows:
        assert step.undo_by is not None
        undo_by = parse_wire_time(step.undo_by)
        about = NoticeRecord(step=step.id, undo_by=step.undo_by, summary=step.summary)
        if now >= undo_by:
            if ("lapse", step.id) not in done:
                notices.append(_lapse(run, step.id, about, entries, reached))
            continue
        if (
            now >= undo_by - timedelta(seconds=rules.remind_before_seconds)
            and ("reminder", step.id) not in done
        ):
            notices.append(
                Notice(
                    run.id,
                    "reminder",
                    about.model_copy(update={"to": principal, "link": link}),
                    principal,
                    f"Undo window closes {step.undo_by}: {step.summary}",
                    f"{_line(step)}\n\nAfter that it can't be undone. Review it: {link}\n",
                )
            )
        escalate_at = undo_by - timedelta(seconds=rules.escalate_before_seconds)
        if (
            escalate_to is not None
            and now >= escalate_at
            and ("escalation", step.id) not in done
            and ("reminder", step.id) in done
            and not _looked_since_reminder(entries, step.id)
        ):
            holders = directory.holders(escalate_to)
            notices.append(
                Notice(
                    run.id,
                    "escalation",
                    about.model_copy(update={"role": escalate_to, "to": holders, "link": link}),
                    holders,
                    f"Nobody has looked: {step.summary}",
                    f"{run.principal} has not looked at this yet.\n{_line(step)}\n\nReview it: {link}\n",
                )
            )
    return notices


def _review(run: Run, windows: list[Step], link: str, now: datetime) -> Notice:
    """The run's review notice: each undo window still open (or closed) and where to review it."""
    lines = [f"- {_line(step)}" + " (closed)" * ((step.undo_by or "") <= wire_time(now)) for step in windows]
    lines = lines or ["- nothing in this run can be undone"]
    text = f"What {run.agent} did for you can still be undone until:\n" + "\n".join(lines)
    return Notice(
        run.id,
        "review",
        NoticeRecord(to=[run.principal], link=link),
        [run.principal],
        f"Review of {run.agent}'s run {run.id}",
        f"{text}\n\nReview it: {link}\n",
    )


def _lapse(
    run: Run, step: str, about: NoticeRecord, entries: list[Entry], reached: dict[str, list[str]]
) -> Notice:
    """A step's lapse: its window closed, with what reached whom (only mail the SMTP server accepted)."""
    got = [
        {"kind": e.kind, "notice": e.id, "to": reached[e.id]}
        for e in entries
        if e.kind in ("reminder", "escalation") and _notice_step(e) == step and e.id in reached
    ]
    after = "escalation" if any(g["kind"] == "escalation" for g in got) else "quiet"
    reminded = any(g["kind"] == "reminder" for g in got)
    lapse = about.model_copy(update={"after": after, "reminded": reminded, "reached": got})
    return Notice(run.id, "lapse", lapse, [], "", "")


def tick(
    store: RunStore,
    policy: Policy,
    directory: Directory,
    mail: MailSection,
    now: datetime,
    base_url: str,
) -> tuple[list[Entry], list[str]]:
    """Record everything due and deliver the mail queued; returns (entries appended, one line per
    notice or mail that did not go, starting with its code: ``MAIL_DEFERRED``, ``MAIL_FAILED``, …).

    Several Recorders on one store tick in turn: while another live process ticks, this one does
    nothing (that process sends what is due), so a notice is mailed once across the fleet.
    """
    with fleet_lease(store.engine, TICK_LEASE, TICK_LEASE_TTL) as held:
        return _tick(store, policy, directory, mail, now, base_url) if held else ([], [])


def _tick(
    store: RunStore,
    policy: Policy,
    directory: Directory,
    mail: MailSection,
    now: datetime,
    base_url: str,
) -> tuple[list[Entry], list[str]]:
    notices, waiting = _scan(store, policy, directory, now, base_url)
    appended, problems = [], []
    for notice in notices:
        try:
            entry, queued = _record(store, notice, directory, mail, now)
        except Exception as error:  # noqa: BLE001 -- one notice never stops another run's
            _log.warning(
                "%s: run %s, %s: %s: %s",
                NOTICE_FAILED,
                notice.run,
                notice.kind,
                type(error).__name__,
                error,
                extra={"code": NOTICE_FAILED, "run": notice.run},
            )
            problems.append(f"{NOTICE_FAILED}: {notice.run} {notice.kind}: {type(error).__name__}: {error}")
            continue
        appended.append(entry)
        if queued is not None:
            waiting.append(queued)
    delivery = deliver(store, waiting, mail, now, _send)
    return appended + delivery.entries, problems + delivery.problems


def _record(
    store: RunStore, notice: Notice, directory: Directory, mail: MailSection, now: datetime
) -> tuple[Entry, QueuedMail | None]:
    """Append the notice's entry: with its mail queued in it, when there is anyone to mail."""
    addresses = [a for a in (_address(directory, p) for p in notice.to) if a]
    sending = bool(addresses and mail.smtp_port is not None)
    message_id = notice_message_id(notice, mail.sender) if sending else None
    mailed = {"mail_to": addresses, "message_id": message_id, "subject": notice.subject, "text": notice.text}
    update: dict[str, object] = {"at": wire_time(now), **(mailed if sending else {})}
    if notice.to and not sending:
        update["mail_to"] = []  # for someone, but nobody to mail (no address, or no [mail])
    entry = store.append(notice.run, notice.kind, notice.body.model_copy(update=update).wire())
    if message_id is None:
        return entry, None
    mailing = (addresses, message_id, notice.subject, notice.text)
    return entry, QueuedMail(notice.run, entry.id, notice.kind, *mailing)


def notice_message_id(notice: Notice, sender: str) -> str:
    """The Message-ID of a notice's mail: the same on every tick, so a resent copy is recognisable."""
    about = notice.body.step or "run"
    return f"<{notice.kind}.{about}.{notice.run}@{sender.rpartition('@')[2] or 'localhost'}>"


def record_seen(store: RunStore, run: str, person: str, now: datetime) -> Entry | None:
    """Note that ``person`` looked at ``run``'s review (once after each reminder, so it can't grow)."""
    entries = store.entries(run)
    last_reminder = max((e.seq for e in entries if e.kind == "reminder"), default=0)
    if any(e.kind == "seen" and e.seq > last_reminder and _seen_by(e) == person for e in entries):
        return None
    return store.append(run, "seen", SeenRecord(by=person, at=wire_time(now)).wire())


def _open_windows(entries: list[Entry]) -> list[Step]:
    undone = reversed_entries(entries)
    windows = [s for s in steps_of(entries) if s.kind == "compensate" and s.undo_by and s.id not in undone]
    return sorted(windows, key=lambda s: (s.undo_by or "", s.number))


def _notice_step(entry: Entry) -> str | None:
    """The step a notice is about (None for a run's review, or a notice that names none readably)."""
    notice = read_as(NoticeBody, entry)
    return notice.step if isinstance(notice, NoticeBody) else None


class SeenBody(BodyModel):
    """``seen``: who looked at a run's review, and when."""

    by: str | None = None


def _seen_by(entry: Entry) -> str | None:
    seen = read_as(SeenBody, entry)
    return seen.by if isinstance(seen, SeenBody) else None


def _looked_since_reminder(entries: list[Entry], step: str) -> bool:
    reminded = next((e.seq for e in entries if e.kind == "reminder" and _notice_step(e) == step), None)
    return reminded is not None and any(e.kind in ("seen", "plan") and e.seq > reminded for e in entries)


def _line(step: Step) -> str:
    return f"step {step.number}: {step.summary} — until {step.undo_by}"


def _address(directory: Directory, person_id: str) -> str | None:
    person = directory.person(person_id)
    return person.email if person is not None else None


def _send(mail: MailSection, to: list[str], subject: str, text: str, message_id: str) -> None:
    # Headers only through the email library (a server's summary is in the subject): _shared/mail.py.
    message = compose(mail.sender, to, subject, text)
    message["Message-ID"] = message_id
    assert mail.smtp_port is not None
    send_message(message, mail.smtp_host, mail.smtp_port)
