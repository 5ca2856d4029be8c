"""The browser thread ``hatp-ui`` drives chromium on: each way it can't do a job is TOOL_FAILED with a
stable ``problem`` (``browser_unavailable``, ``browser_timeout``), and the job's caller gets it back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page

from hatp_journal.servers.fakeapp.pytest_fixtures import require_chromium
from hatp_journal.servers.ui.browser import BrowserThread
from hatp_journal.toolkit import ToolFailed


def test_a_job_for_a_chromium_that_is_not_there_is_browser_unavailable_and_never_runs(tmp_path: Path) -> None:
    ran: list[str] = []
    browser = BrowserThread(tmp_path / "no-chromium")
    try:
        with pytest.raises(ToolFailed) as refused:
            browser.run(lambda page: ran.append(page.url))
    finally:
        browser.close()

    assert refused.value.data["problem"] == "browser_unavailable"
    assert ran == []


def test_a_job_after_the_browser_was_closed_is_browser_unavailable(tmp_path: Path) -> None:
    browser = BrowserThread(tmp_path / "no-chromium")
    browser.close()

    with pytest.raises(ToolFailed) as refused:
        browser.run(lambda page: page.url)

    assert refused.value.data["problem"] == "browser_unavailable"
    assert "shut down" in refused.value.message


@pytest.mark.browser
def test_a_job_that_outlasts_its_bound_is_browser_timeout_not_a_hang() -> None:
    let_go = threading.Event()

    def slow(page: Page) -> str:
        let_go.wait()  # held until the caller was told: then closing the browser need not wait long
        return page.url

    browser = BrowserThread(require_chromium(), timeout_ms=50)  # every job is bounded at 20 × 50 ms
    try:
        started = time.monotonic()
        with pytest.raises(ToolFailed) as refused:
            browser.run(slow)
        waited = time.monotonic() - started
    finally:
        let_go.set()
        browser.close()

    assert refused.value.data["problem"] == "browser_timeout"
    assert waited < 2.5
