"""A real SMTP mail sink for tests and demos: what was "sent" lands in a Maildir you can read.

Start one with ``MailSink(directory)`` (or the ``hatp-mailsink serve`` command), send to its port,
then read what arrived with :meth:`MailSink.messages` or, after the fact, :func:`read_maildir`.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from ._maildir import DeliveredMessage, Resend, read_maildir, resent
    from ._server import MailSink
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.mailsink._maildir": [
                "DeliveredMessage",
                "Resend",
                "read_maildir",
                "resent",
            ],
            "hatp_journal.servers.mailsink._server": ["MailSink"],
        },
    )

__all__ = ["DeliveredMessage", "MailSink", "Resend", "read_maildir", "resent"]
