"""Send one email over SMTP, with one stable error for every way delivery can fail."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage


class MailDeliveryError(Exception):
    """The message was not (fully) delivered: refused by the server, or the server was unreachable.

    ``reason`` says why; ``refused`` maps each refused recipient to the server's (code, reply).
    """

    code = "MAIL_DELIVERY_FAILED"

    def __init__(self, reason: str, refused: dict[str, tuple[int, bytes]] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused: dict[str, tuple[int, bytes]] = dict(refused or {})


def send_message(msg: EmailMessage, host: str, port: int, timeout: float = 10) -> None:
    """Send ``msg`` to the SMTP server at ``host:port`` (recipients from its To/Cc/Bcc headers).

    Raises :class:`MailDeliveryError` if the server is unreachable, refuses the message, or refuses
    any recipient (in that last case the others did receive it; ``refused`` lists who did not).
    """
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as client:
            refused = client.send_message(msg)
    except smtplib.SMTPRecipientsRefused as exc:
        raise MailDeliveryError("all recipients were refused", exc.recipients) from exc
    except smtplib.SMTPResponseException as exc:
        error = exc.smtp_error
        reply = error.decode("utf-8", "replace") if isinstance(error, bytes) else error
        raise MailDeliveryError(f"server refused: {exc.smtp_code} {reply}") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise MailDeliveryError(f"cannot deliver via {host}:{port}: {exc}") from exc
    if refused:
        raise MailDeliveryError(f"recipients refused: {', '.join(sorted(refused))}", refused)
