"""A real SMTP mail sink for tests and demos: what was "sent" lands in a Maildir you can read.

Start one with ``MailSink(directory)`` (or the ``hatp-mailsink serve`` command), send to its port,
then read what arrived with :meth:`MailSink.messages` or, after the fact, :func:`read_maildir`.
"""

from ._maildir import DeliveredMessage, read_maildir
from ._server import MailSink

__all__ = ["DeliveredMessage", "MailSink", "read_maildir"]
