"""``hatp-ui`` as a journal-aware MCP server: invoicing tools that act through the app's UI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from fastmcp import FastMCP

from hatp_journal.toolkit import Journal, SigningKey, ToolFailed, create_store_engine
from hatp_journal.toolkit.wire import utc_now

from .browser import BrowserThread
from .constants import DEFAULT_CHROMIUM
from .constants import SERVER as SERVER  # re-exported
from .evidence import EvidenceFiles
from .screens import InvoiceScreens
from .testing import ui_testing_hooks
from .tools import InvoiceUi, build_tools

INSTRUCTIONS = (
    "Invoicing in the team's web app, done the way a person does it: every tool opens the app in a "
    "browser, fills its forms and presses its buttons. create_invoice, edit_invoice and delete_invoice "
    "can be undone while the app's Trash keeps deleted invoices; send_invoice cannot be undone."
)


class RetentionMismatch(ValueError):
    """The window given on the command line is not the one the app's Trash keeps."""


@dataclass(frozen=True)
class UiSettings:
    """Where the app is, how to drive it, and where to keep the journal and evidence."""

    app_url: str
    db: Path
    key: SigningKey
    chromium: Path = DEFAULT_CHROMIUM
    retention_days: int | None = None
    evidence_dir: Path | None = None
    server: str = SERVER
    timeout_ms: int = 5_000


@dataclass(frozen=True)
class UiServer:
    """The MCP server, its journal, and the browser to close when done."""

    mcp: FastMCP
    journal: Journal
    browser: BrowserThread
    retention_days: int


def app_retention_days(browser: BrowserThread, app_url: str) -> int:
    """How many days the app's Trash keeps deleted invoices, read from its Trash page."""
    days: int = browser.run(lambda page: InvoiceScreens(page, app_url).retention_days())
    return days


def build(settings: UiSettings, clock: Callable[[], datetime] | None = None) -> UiServer:
    """Start the browser, learn the undo window from the app and serve the tools.

    With ``retention_days`` unset the app must be reachable (its Trash page says the window). Set,
    it must match the app when the app answers (:class:`RetentionMismatch`); when the app does not
    answer, the server starts anyway with that window and its tools fail until the app is back.
    """
    browser = BrowserThread(settings.chromium, timeout_ms=settings.timeout_ms)
    try:
        days = _window_days(browser, settings)
        evidence = EvidenceFiles(settings.evidence_dir or Path(f"{settings.db}.evidence"))
        ui = InvoiceUi(settings.server, settings.app_url, browser, evidence, days)
        mcp = FastMCP("hatp-ui", instructions=INSTRUCTIONS)
        journal = Journal(
            settings.server,
            key=settings.key,
            store=create_store_engine(settings.db),
            clock=clock or utc_now,
        )
        # The testing hooks are published only in testing mode (HATP_JOURNAL_TESTING=1).
        journal.register(mcp, *build_tools(ui), *ui_testing_hooks(ui))
    except BaseException:
        browser.close()
        raise
    return UiServer(mcp, journal, browser, days)


def _window_days(browser: BrowserThread, settings: UiSettings) -> int:
    try:
        shown = app_retention_days(browser, settings.app_url)
    except ToolFailed as error:
        if settings.retention_days is None or error.data.get("problem") == "browser_unavailable":
            raise
        return settings.retention_days
    if settings.retention_days is not None and settings.retention_days != shown:
        raise RetentionMismatch(
            f"the app's Trash keeps invoices {shown} days, but --retention-days says "
            f"{settings.retention_days}; undo windows must follow the app"
        )
    return shown
