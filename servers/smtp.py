"""The servers' name for the shared SMTP sender, which lives in :mod:`hatp_journal._shared.mail`."""

from hatp_journal._shared.mail import (
    Envelope,
    MailDeliveryError,
    SmtpSession,
    SmtpUtf8NotOfferedError,
    probe,
    send_message,
)

__all__ = ["Envelope", "MailDeliveryError", "SmtpSession", "SmtpUtf8NotOfferedError", "probe", "send_message"]
