"""Fixtures for the approver's pages: the undo tests' organisation, served, and a real chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page
from support.undo_org import make_org
from web_org import Approver, approver_for

from hatp_journal.servers.fakeapp.pytest_fixtures import browser_page, chromium

__all__ = ["approver", "browser_page", "chromium", "page"]

# Approving a plan starts the tool servers over stdio, checks and compensates: seconds on a busy machine.
DECISION_TIMEOUT_MS = 30_000


@pytest.fixture
def page(browser_page: Page) -> Page:
    """The fake app's fresh-context page, with waits long enough for a decision that runs an undo."""
    browser_page.set_default_timeout(DECISION_TIMEOUT_MS)
    return browser_page


@pytest.fixture
def approver(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Approver]:
    with approver_for(make_org(tmp_path, capfd)) as served:
        yield served
