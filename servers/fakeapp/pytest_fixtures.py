"""Pytest fixtures for driving the fake app in a real browser; reusable by other test suites.

Use them by importing into a ``conftest.py``::

    from hatp_journal.servers.fakeapp.pytest_fixtures import (
        browser_page,
        chromium,
        fake_app,
        fake_app_server,
    )

(a fixture's dependencies must be importable from the same ``conftest.py``).

``browser_page`` needs Debian's chromium at ``/usr/bin/chromium`` (Playwright's own browser
downloads are not used). Without it, browser tests are skipped with the install hint, except when
``CI=true``: there a missing browser fails the test, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ._runner import FakeApp

__all__ = [
    "CHROMIUM_ARGS",
    "CHROMIUM_PATH",
    "PAGE_TIMEOUT_MS",
    "browser_page",
    "chromium",
    "fake_app",
    "fake_app_server",
    "require_chromium",
]

CHROMIUM_PATH: Final = Path("/usr/bin/chromium")
# Keeps headless chromium off the network it cannot reach here (see TECH-NOTES "Browser").
CHROMIUM_ARGS: Final = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
# Every Playwright wait on a page is bounded by this.
PAGE_TIMEOUT_MS: Final = 5_000
INSTALL_HINT: Final = "apt-get install chromium"


def require_chromium(path: Path = CHROMIUM_PATH, environ: Mapping[str, str] = os.environ) -> Path:
    """Return ``path`` if the browser is there; otherwise skip the test, or fail it under CI=true."""
    if path.exists():
        return path
    message = f"{path} is missing: install Debian's chromium ({INSTALL_HINT}, as root)"
    if environ.get("CI") == "true":
        pytest.fail(f"{message}; browser tests must run in CI", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def fake_app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApp]:
    """One :class:`FakeApp` serving for the whole session; tests get it through ``fake_app``."""
    app = FakeApp(tmp_path_factory.mktemp("fakeapp") / "fakeapp.db")
    app.start()
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def fake_app(fake_app_server: FakeApp) -> FakeApp:
    """A serving :class:`FakeApp` (layout a, test controls on) in the state of a fresh database.

    The server is shared by the session and reset before each test (seeded invoices, layout a,
    restore working, real time): starting and stopping uvicorn per test costs ~0.2 s.
    """
    fake_app_server.reset()
    return fake_app_server


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """One headless chromium per test module (Playwright gives it a fresh user-data dir).

    Module scope, not session: Playwright's sync API keeps an event loop running
    while it is open, which would break the async tests of later modules.
    """
    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_page(chromium: Browser) -> Iterator[Page]:
    """A page in its own fresh browser context (no cookies or storage shared between tests)."""
    context = chromium.new_context()
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()
