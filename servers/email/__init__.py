"""The demo email server (``hatp-email``): irreversible sending over real SMTP, reversible drafts.

``build(db, key, smtp=MailSettings(...))`` gives the FastMCP server and its
:class:`~hatp_journal.toolkit.Journal`. See README.md.
"""

from .server import MailSettings, build, mail_tools
from .store import SERVER, Draft, SentMail, draft_uri, list_sent, sent_uri

__all__ = [
    "SERVER",
    "Draft",
    "MailSettings",
    "SentMail",
    "build",
    "draft_uri",
    "list_sent",
    "mail_tools",
    "sent_uri",
]
