"""Every approver page fits a 390 px phone and a 1280 px desktop window: nothing scrolls sideways.

One organisation and one chromium for the whole module: the pages are set up once (a held call ask,
a run, a plan, its outcome) and each is read at both widths.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, TextIO

import pytest
from playwright.sync_api import Browser, Page
from support.undo_org import DANA, LEE, make_org
from web_org import Approver, HeldAgent, approver_for, in_thread, policy_that_asks_before_publishing

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
# A long value with no place to break: the pages must wrap it, not widen.
LONG_VALUE = "x" * 300


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Approver, dict[str, str]]]:
    """The served approver and the path of each page: sign-in, asks, ask, review, plan, outcome."""
    capfd: Any = _CommandOutput()
    with approver_for(make_org(tmp_path_factory.mktemp("fit"), capfd)) as approver:
        policy_that_asks_before_publishing(approver.org)
        run = approver.agent(
            [("chain_put", {"key": "a", "value": LONG_VALUE}), ("chain_put", {"key": "a", "value": "2"})]
        )
        approved = approver.plan(run, "--step", "2", by=DANA)
        _, out, err = in_thread(lambda: approver.org.approve(approved))
        assert "Reversal Record" in out, out + err  # its outcome page is one of the pages read
        pending = approver.plan(run, "--from", "1", by=DANA)
        with HeldAgent(approver.org, "chain_publish", {"key": "a"}) as agent:
            ask = f"{agent.run}/{agent.first['structured']['ask']}"
            yield (
                approver,
                {
                    "asks": "/asks",
                    "ask": f"/asks/{ask}",
                    "review": f"/runs/{run}",
                    "timeline": f"/runs/{run}/timeline",
                    "plan": f"/plans/{pending}",
                    "approved plan": f"/plans/{approved}",
                    "outcome": f"/plans/{approved}/outcome",
                    "runs": "/runs",
                },
            )


class _CommandOutput:
    """What ``Org.cli`` needs of capfd, for a module-scoped world: its first call starts capturing
    stdout and stderr, the next stops and hands back what was printed."""

    def __init__(self) -> None:
        self._saved: tuple[TextIO, TextIO] | None = None

    def readouterr(self) -> SimpleNamespace:
        if self._saved is None:
            self._saved = (sys.stdout, sys.stderr)
            sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
            return SimpleNamespace(out="", err="")
        out, err = sys.stdout.getvalue(), sys.stderr.getvalue()  # type: ignore[attr-defined]
        sys.stdout, sys.stderr = self._saved
        self._saved = None
        return SimpleNamespace(out=out, err=err)


def fits(page: Page, width: int) -> None:
    """The page is laid out at the window's width (the viewport meta is honoured on a phone) and
    nothing is wider than it."""
    laid_out, widest = page.evaluate(
        "() => [document.documentElement.clientWidth, document.documentElement.scrollWidth]"
    )
    assert (laid_out, widest) == (width, width), page.url


def open_at(chromium: Browser, size: dict[str, int]) -> Page:
    phone = size["width"] < 600
    context = chromium.new_context(viewport=size, is_mobile=phone, has_touch=phone)
    context.set_default_timeout(30_000)
    return context.new_page()


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["390px", "1280px"])
def test_every_page_fits_the_window_without_scrolling_sideways(
    pages: tuple[Approver, dict[str, str]], chromium: Browser, size: dict[str, int]
) -> None:
    approver, paths = pages
    page = open_at(chromium, size)
    try:
        page.goto(approver.web.link(LEE))
        assert page.url.endswith("/asks")
        for path in paths.values():
            page.goto(approver.url + path)
            fits(page, size["width"])
        used = approver.web.link(LEE)
        page.goto(used)
        page.goto(used)  # a sign-in link works once: the second visit shows the sign-in refusal
        assert approver.code(page) == "SIGNIN_USED"
        fits(page, size["width"])
    finally:
        page.context.close()


def test_the_header_wraps_in_a_narrow_window_instead_of_being_cut(
    pages: tuple[Approver, dict[str, str]], chromium: Browser
) -> None:
    approver, _ = pages
    page = open_at(chromium, {"width": 320, "height": 600})
    try:
        page.goto(approver.web.link(LEE))
        header = page.locator("header").bounding_box()
        who = page.locator("header .who").bounding_box()
        assert header is not None
        assert who is not None
        assert who["x"] + who["width"] <= header["x"] + header["width"]
        fits(page, 320)
    finally:
        page.context.close()
