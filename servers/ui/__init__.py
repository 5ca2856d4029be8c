"""``hatp-ui``: a computer-use MCP server whose invoicing tools act only through a web app's UI.

It drives the fake invoicing app (``hatp-fakeapp``) in headless chromium, fingerprints the one
record each call changes, and undoes through the app's own reverse actions (protocol.md §6).
``build(UiSettings(...))`` gives the FastMCP server, its journal and its browser. See README.md.
"""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from .browser import BrowserThread, BrowserUnavailable
    from .evidence import EvidenceFiles, evidence_file
    from .server import SERVER, RetentionMismatch, UiServer, UiSettings, app_retention_days, build
    from .tools import SEND_REASON, SEND_REMEDY
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.servers.ui.browser": ["BrowserThread", "BrowserUnavailable"],
            "hatp_journal.servers.ui.evidence": ["EvidenceFiles", "evidence_file"],
            "hatp_journal.servers.ui.server": [
                "SERVER",
                "RetentionMismatch",
                "UiServer",
                "UiSettings",
                "app_retention_days",
                "build",
            ],
            "hatp_journal.servers.ui.tools": ["SEND_REASON", "SEND_REMEDY"],
        },
    )

__all__ = [
    "SEND_REASON",
    "SEND_REMEDY",
    "SERVER",
    "BrowserThread",
    "BrowserUnavailable",
    "EvidenceFiles",
    "RetentionMismatch",
    "UiServer",
    "UiSettings",
    "app_retention_days",
    "build",
    "evidence_file",
]
