"""The demo email server (``hatp-email``): irreversible sending over real SMTP, reversible drafts.

``build(db, key, smtp=MailSettings(...))`` gives the FastMCP server and its
:class:`~hatp_journal.toolkit.Journal`. See README.md.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from .server import MailSettings, build, mail_tools
    from .store import SERVER, Draft, SentMail, draft_uri, list_sent, sent_uri
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.email.server": ["MailSettings", "build", "mail_tools"],
            "hatp_journal.servers.email.store": [
                "SERVER",
                "Draft",
                "SentMail",
                "draft_uri",
                "list_sent",
                "sent_uri",
            ],
        },
    )

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
