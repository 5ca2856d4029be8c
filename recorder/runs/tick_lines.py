"""What ``hatp-recorder tick`` prints: one line per notice recorded, with what became of its mail,
and one per mail of an earlier notice tried again."""

from __future__ import annotations

from collections.abc import Sequence

from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import MailBody, NoticeBody, Unreadable, read_as
from hatp_journal.recorder.runs.notice_mail import MAIL_OUTCOMES

NOT_MAILED = "not mailed (no address, or no [mail] configured)"


def tick_lines(entries: Sequence[Entry]) -> list[list[str]]:
    """The columns of each line: run/entry, kind, the step, ``after …``, the mail."""
    outcomes = {(e.run, _notice_of(e)): e for e in entries if e.kind in MAIL_OUTCOMES}
    notices = {(e.run, e.id) for e in entries if e.kind not in MAIL_OUTCOMES}
    lines: list[list[str]] = []
    for entry in entries:
        if entry.kind in MAIL_OUTCOMES:
            if (entry.run, _notice_of(entry)) not in notices:
                lines.append(_retried(entry))
            continue
        lines.append(_notice(entry, outcomes.get((entry.run, entry.id))))
    return lines


def _notice(entry: Entry, outcome: Entry | None) -> list[str]:
    body = read_as(NoticeBody, entry)
    if isinstance(body, Unreadable):
        return [f"{entry.run}/{entry.id}", entry.kind, f"unreadable: {body.text()}", "", ""]
    about = f"{body.step}: {body.summary or ''}" if body.step else ""
    after = f"after {body.after}" if body.after else ""
    if outcome is not None:
        to = _outcome(outcome)
    elif body.mailed_to:  # a notice written before the mail queue
        to = "mailed to " + ", ".join(body.mailed_to)
    elif body.mail_to:
        to = "queued for " + ", ".join(body.mail_to)
    elif body.mail_to is not None or body.mailed_to is not None:
        to = NOT_MAILED
    else:
        to = ""
    return [f"{entry.run}/{entry.id}", entry.kind, about, after, to]


def _notice_of(entry: Entry) -> str:
    """The notice a mail outcome is about ("" when it can't be read)."""
    body = read_as(MailBody, entry)
    return body.notice if isinstance(body, MailBody) else ""


def _retried(entry: Entry) -> list[str]:
    return [f"{entry.run}/{entry.id}", entry.kind, f"mail of {_notice_of(entry)}", "", _outcome(entry)]


def _outcome(entry: Entry) -> str:
    body = read_as(MailBody, entry)
    if isinstance(body, Unreadable):
        return f"unreadable: {body.text()}"
    if entry.kind == "mail-delivered":
        return "mailed to " + ", ".join(body.to or [])
    if entry.kind == "mail-deferred":
        return f"mail deferred ({body.code}), next try at {body.retry_at}"
    return f"mail failed ({body.code or 'MAIL_FAILED'})"
