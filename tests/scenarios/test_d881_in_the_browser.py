"""`hatp-demo d881 --browser`: the story prints Lee's link and waits for the decision made on the page."""

from __future__ import annotations

import os
import queue
import re
import socket
import threading
from pathlib import Path

import anyio
import pytest
from playwright.sync_api import Page

from hatp_journal.scenarios import d881
from hatp_journal.scenarios.d881 import Told
from hatp_journal.servers.fakeapp.pytest_fixtures import browser_page, chromium

__all__ = ["browser_page", "chromium"]
pytestmark = [pytest.mark.browser, pytest.mark.slow]
# The README's screenshot, rewritten only when asked (`make screenshots`): test runs leave the tree clean.
README_SCREENSHOT = Path(__file__).parents[2] / "docs" / "img" / "reversal-plan.png"
WAIT_SECONDS = 120
MAX_LINES = 10_000
"""How many printed lines ``until`` reads looking for one before it says none matched."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Lines:
    """A text stream that hands each printed line to the test's thread."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        *done, self._partial = self._partial.split("\n")
        for line in done:
            self.lines.put(line)
        return len(text)

    def flush(self) -> None:
        pass

    def until(self, pattern: str) -> str:
        for _ in range(MAX_LINES):  # each line is progress; a story never prints this many
            line = self.lines.get(timeout=WAIT_SECONDS)
            found = re.search(pattern, line)
            if found:
                return found.group(1)
        raise AssertionError(f"no line matched {pattern!r} in {MAX_LINES} lines")


def test_the_story_waits_for_lees_approval_on_the_page_and_then_undoes_the_run(
    tmp_path: Path, browser_page: Page, capfd: pytest.CaptureFixture[str]
) -> None:
    out = Lines()
    told: list[Told] = []
    port = free_port()
    story = threading.Thread(
        target=lambda: told.append(
            anyio.run(
                lambda: d881.run(
                    tmp_path / "d881",
                    out,
                    browser=True,
                    wait_seconds=WAIT_SECONDS,
                    in_process=True,
                    port=port,
                )
            )
        ),
        daemon=True,
    )
    story.start()
    link = out.until(r"Sign in as Lee: (\S+)")
    plan = out.until(r"then open the plan: (\S+)")
    assert plan.startswith(f"http://127.0.0.1:{port}/")  # --port: served where it was asked to be
    browser_page.set_default_timeout(WAIT_SECONDS * 1000)

    browser_page.goto(link)
    browser_page.goto(plan)
    assert browser_page.locator("li.step").count() == 2
    assert "delivered to external recipients" in browser_page.inner_text("#not-reversible")
    # Before anyone approves, the plan names who gets the cancellation notice.
    assert "buyer@globex.com" in browser_page.inner_text("li.step[data-step='2'] .recipients")
    update = os.environ.get("HATP_UPDATE_SCREENSHOTS") == "1"
    shot = README_SCREENSHOT if update else tmp_path / "reversal-plan.png"
    browser_page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 0
    browser_page.click("#approve")
    browser_page.locator("#reversal").wait_for()  # the outcome page reloads until the undo is done
    browser_page.wait_for_load_state()
    story.join(WAIT_SECONDS)

    assert not story.is_alive()
    # The tool servers the approver starts print no start-up lines into the story's terminal.
    assert "Starting MCP server" not in capfd.readouterr().err
    assert browser_page.locator("tr.outcome-step[data-status='reversed']").count() == 2
    [result] = told
    assert "Reversal Record" in result.reversal
    assert result.reversal.count("reversed") == 2
