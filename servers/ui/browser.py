"""One headless chromium, driven from one dedicated thread.

The toolkit runs journaled functions, state readers and compensations synchronously, each in
whatever worker thread FastMCP picks, inside a store transaction. Playwright's sync objects
belong to the thread that made them, so every browser job is handed to a single thread that owns
Playwright; the caller blocks until its job is done. One thread also means one job at a time:
an action's read-act-read sequence is never interleaved with another call's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Final, TypeVar

from playwright.sync_api import Browser, Page, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from hatp_journal.toolkit import ToolFailed

from .constants import DEFAULT_CHROMIUM as DEFAULT_CHROMIUM  # re-exported

T = TypeVar("T")

# Keeps headless chromium off the network it cannot reach here (see TECH-NOTES "Browser").
CHROMIUM_ARGS: Final = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
INSTALL_HINT: Final = "apt-get install chromium"


class BrowserUnavailable(ToolFailed):
    """Chromium could not be started (missing, or it crashed on launch)."""


class BrowserThread:
    """Runs ``job(page)`` calls one at a time on a thread that owns Playwright and chromium.

    Chromium starts on the first job, so a server starts (and lists its tools) without it. Jobs
    share one page (a new browser context costs ~0.3 s here, a page load ~0.05 s); after a job
    fails in any way, the next one gets a fresh context. Every wait on the page is bounded by ``timeout_ms``.
    """

    def __init__(
        self,
        executable: Path = DEFAULT_CHROMIUM,
        *,
        timeout_ms: int = 5_000,
        args: Sequence[str] = CHROMIUM_ARGS,
    ) -> None:
        self.executable = executable
        self.timeout_ms = timeout_ms
        self._args = list(args)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hatp-ui-browser")
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._page: Page | None = None
        self._lock = threading.Lock()
        self._closed = False

    def run(self, job: Callable[[Page], T]) -> T:
        """Run ``job`` with a fresh page on the browser thread and return what it returns."""
        with self._lock:
            if self._closed:
                raise BrowserUnavailable("the browser was shut down", problem="browser_unavailable")
            future = self._executor.submit(self._run, job)
        # Every Playwright wait inside a job is bounded; this bound only guards against a hang.
        try:
            return future.result(timeout=self.timeout_ms / 1000 * 20)
        except FutureTimeout:
            raise ToolFailed(
                "the browser did not finish its work in time", problem="browser_timeout"
            ) from None

    def close(self) -> None:
        """Close chromium and Playwright (on their thread) and stop the thread. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.submit(self._shutdown).result(timeout=30)
        self._executor.shutdown(wait=True)

    def _run(self, job: Callable[[Page], T]) -> T:
        page = self._page or self._new_page()
        try:
            return job(page)
        except PlaywrightError as error:
            self._discard(page)
            raise ToolFailed(
                f"the page did not behave as expected: {first_line(error)}", problem="page_unexpected"
            ) from None
        except BaseException:
            self._discard(page)
            raise

    def _discard(self, page: Page) -> None:
        """Drop the page of a failed job; the next job starts in a fresh context.

        A failed job may leave the page mid-navigation: after a load fails, chromium goes on to
        its own error page, and a later ``goto`` on that page is "interrupted by another
        navigation". A fresh context (~0.3 s) costs less than that race.
        """
        self._page = None
        with contextlib.suppress(PlaywrightError):
            page.context.close()

    def _new_page(self) -> Page:
        browser = self._browser or self._launch()
        context = browser.new_context()
        context.set_default_timeout(self.timeout_ms)
        context.set_default_navigation_timeout(self.timeout_ms)
        self._page = context.new_page()
        return self._page

    def _launch(self) -> Browser:
        if not self.executable.exists():
            raise BrowserUnavailable(
                f"no chromium at {self.executable}; install Debian's chromium ({INSTALL_HINT}) "
                "or pass --chromium PATH",
                problem="browser_unavailable",
            )
        playwright = sync_playwright().start()
        try:
            browser = playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=self._args
            )
        except PlaywrightError as error:
            playwright.stop()
            raise BrowserUnavailable(
                f"chromium at {self.executable} did not start: {error.message}",
                problem="browser_unavailable",
            ) from None
        self._playwright, self._browser = playwright, browser
        return browser

    def _shutdown(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser, self._playwright, self._page = None, None, None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


def first_line(error: PlaywrightError) -> str:
    """The first line of a Playwright error (the rest is its call log)."""
    return (error.message or str(error)).splitlines()[0]
