"""Pytest fixtures for testing UI fingerprints against the fake invoicing app in a real browser.

Turn them on in your project's root ``conftest.py``::

    pytest_plugins = ["hatp_journal.servers.fakeapp.pytest_ui"]

and write tests that take ``fake_app`` (the app serving on 127.0.0.1, reset to its seeded state
before each test, with knobs for a second layout, a colleague's edit and a faulty restore) and
``browser_page`` (a page of headless Debian chromium in a fresh context). See docs/ui-undo.md.

Browser tests need ``/usr/bin/chromium`` (``apt-get install chromium``): without it they are
skipped with that hint, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import pytest

from hatp_journal.servers.fakeapp.pytest_fixtures import (
    CHROMIUM_PATH,
    browser_page,
    chromium,
    fake_app,
    fake_app_server,
    require_chromium,
)

__all__ = [
    "CHROMIUM_PATH",
    "browser_page",
    "chromium",
    "fake_app",
    "fake_app_server",
    "pytest_configure",
    "require_chromium",
]


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``browser`` marker, so ``--strict-markers`` suites can use it."""
    config.addinivalue_line("markers", "browser: needs Debian's chromium (skips with an install hint)")
