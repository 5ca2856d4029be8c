"""Mailing iTIP messages: one email per attendee, through the outbox, with an exact record of whom.

One message per attendee (rather than one message to all) means a refusal of one address can't
hide behind the others: every attendee is either in ``delivered`` or in ``failed``/``skipped``.
Each message is staged in the tool's transaction (see :mod:`hatp_journal.servers.outbox`): the
SMTP server has accepted the attendee and the content, and the message is released after the
commit, or dropped unsent if the call rolls back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hatp_journal._shared.mail import MailDeliveryError
from hatp_journal.servers.calendar.itip import EventData, invitation_email, parse_event, parse_method
from hatp_journal.servers.outbox import Outbox, Staged
from hatp_journal.toolkit import Tx

__all__ = ["Delivery", "Mailer"]


@dataclass
class Delivery:
    """Who an iTIP message goes to (``delivered``), who refused it and why, who was not tried.

    ``notices`` are the staged messages, one per address in ``delivered``, with their Message-IDs.

    ``codes`` gives each address in ``failed`` the stable code of its failure, e.g.
    ``MAIL_DELIVERY_FAILED`` or ``SMTPUTF8_NOT_OFFERED`` (a non-ASCII address the server can't take).
    """

    delivered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    codes: dict[str, str] = field(default_factory=dict)
    notices: list[Staged] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every attendee received the message."""
        return not self.failed and not self.skipped

    def problems(self) -> list[str]:
        """One line per attendee who did not receive the message."""
        lines = [f"{address}: {reason}" for address, reason in self.failed.items()]
        return lines + [f"{address}: not attempted after an earlier failure" for address in self.skipped]


@dataclass(frozen=True)
class Mailer:
    """Sends iTIP messages from ``organizer`` through ``outbox``."""

    outbox: Outbox
    organizer: str

    @property
    def smtp(self) -> str:
        """The SMTP server, as ``host:port``."""
        return f"{self.outbox.host}:{self.outbox.port}"

    def send(
        self, tx: Tx, ics: str, attendees: tuple[str, ...], *, about: str, stop_at_first_failure: bool
    ) -> Delivery:
        """Stage ``ics`` (a REQUEST or CANCEL) for each attendee in its own message, in ``tx``.

        ``stop_at_first_failure`` suits a new invitation (one refusal fails the call, so trying the
        others is pointless); a cancellation tries everyone, since each one reached counts.
        """
        method = parse_method(ics)
        subject = _subject(method, parse_event(ics))
        kind = "cancellation notice" if method == "CANCEL" else "invitation"
        delivery = Delivery()
        batch = self.outbox.batch(tx)  # released together after the commit
        for index, address in enumerate(attendees):
            message = invitation_email(ics, method, self.organizer, [address], subject)
            try:
                staged = batch.stage(message, kind=kind, about=about)
            except MailDeliveryError as error:
                delivery.failed[address] = _reason(error, address)
                delivery.codes[address] = error.code
                if stop_at_first_failure:
                    delivery.skipped = list(attendees[index + 1 :])
                    break
            else:
                delivery.delivered.append(address)
                delivery.notices.append(staged)
        return delivery


def _subject(method: str, event: EventData) -> str:
    when = f"{event.start:%a} {event.start.day} {event.start:%b %Y %H:%M} UTC"
    if method == "CANCEL":
        return f"Cancelled: {event.summary} @ {when}"
    prefix = "Invitation" if event.sequence == 0 else "Updated invitation"
    return f"{prefix}: {event.summary} @ {when}"


def _reason(error: MailDeliveryError, address: str) -> str:
    refused = error.refused.get(address)
    if refused is None:
        return error.reason
    code, reply = refused
    return f"refused: {code} {reply.decode('utf-8', 'replace')}"
