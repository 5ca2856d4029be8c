"""Mailing iTIP messages: one email per attendee, with an exact record of who received it.

One message per attendee (rather than one message to all) means a refusal of one address can't
hide behind the others: every attendee is either in ``delivered`` or in ``failed``/``skipped``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hatp_journal.servers.calendar.itip import EventData, invitation_email, parse_event, parse_method
from hatp_journal.servers.smtp import MailDeliveryError, send_message

__all__ = ["Delivery", "Mailer"]


@dataclass
class Delivery:
    """Who an iTIP message reached (``delivered``), who refused it and why, who was not tried.

    ``codes`` gives each address in ``failed`` the stable code of its failure, e.g.
    ``MAIL_DELIVERY_FAILED`` or ``SMTPUTF8_NOT_OFFERED`` (a non-ASCII address the server can't take).
    """

    delivered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    codes: dict[str, str] = field(default_factory=dict)

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
    """Sends iTIP messages from ``organizer`` through the SMTP server at ``host:port``."""

    host: str
    port: int
    organizer: str

    def send(self, ics: str, attendees: tuple[str, ...], *, stop_at_first_failure: bool) -> Delivery:
        """Mail ``ics`` (a REQUEST or CANCEL) to each attendee in its own message.

        ``stop_at_first_failure`` suits a new invitation (the fewer people got it, the fewer must be
        told it is withdrawn); a cancellation tries everyone, since each one reached counts.
        """
        method = parse_method(ics)
        subject = _subject(method, parse_event(ics))
        delivery = Delivery()
        for index, address in enumerate(attendees):
            message = invitation_email(ics, method, self.organizer, [address], subject)
            try:
                send_message(message, self.host, self.port)
            except MailDeliveryError as error:
                delivery.failed[address] = _reason(error, address)
                delivery.codes[address] = error.code
                if stop_at_first_failure:
                    delivery.skipped = list(attendees[index + 1 :])
                    break
            else:
                delivery.delivered.append(address)
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
