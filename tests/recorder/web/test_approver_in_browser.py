"""The approver's pages in a real headless chromium: asks, plans, conflicts, late clicks, escaping."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from http_browser import decisions
from playwright.sync_api import Page
from support.chain_server import outside_edit, published, values
from support.undo_org import DANA, EVE, LEE
from web_org import Approver, HeldAgent, policy_that_asks_before_publishing

from hatp_journal.toolkit.store import create_store_engine

pytestmark = pytest.mark.browser


def two_puts(second: str) -> list[tuple[str, dict[str, Any]]]:
    """Create key a, then change it to ``second``."""
    return [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": second})]


def the_outcome(page: Page) -> None:
    """Wait on the outcome page (it reloads while the undo runs) for the Reversal Record."""
    assert page.url.endswith("/outcome")
    page.locator("#reversal").wait_for()
    page.wait_for_load_state()  # the rows after it may not be parsed yet


def test_an_ask_approved_on_the_page_lets_the_call_through(approver: Approver, page: Page) -> None:
    policy_that_asks_before_publishing(approver.org)
    approver.agent([("chain_put", {"key": "a", "value": "1"})])
    with HeldAgent(approver.org, "chain_publish", {"key": "a"}) as agent:
        assert agent.first["structured"]["status"] == "pending_approval"
        ref = f"{agent.run}/{agent.first['structured']['ask']}"
        approver.sign_in(page, LEE)
        page.click(f"li.ask[data-ref='{ref}'] a")
        page.wait_for_load_state()  # the reasons are read whole, not while they are parsed
        assert "IRREVERSIBLE" in page.inner_text("#reasons")
        page.click("#approve")
        assert approver.code(page) == "COUNTED"
        second = agent.call_again()

    assert not second["is_error"]
    engine = create_store_engine(approver.org.db())
    try:
        assert published(engine) == 1
    finally:
        engine.dispose()
    assert decisions(approver, agent.run) == [True]


def test_a_reversal_plan_asked_for_and_approved_on_the_pages_runs_the_undo_and_shows_the_outcome(
    approver: Approver, page: Page
) -> None:
    run = approver.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": "2"})]
    )
    approver.sign_in(page, LEE)
    page.goto(f"{approver.url}/runs/{run}")
    assert page.locator("tr.window.open").count() == 2
    page.click("#undo-from-1")
    page.wait_for_load_state()  # a click waits only until the plan page starts loading
    assert "/plans/" in page.url
    assert page.locator("li.step").count() == 2

    page.click("#approve")

    the_outcome(page)
    statuses = page.locator("tr.outcome-step").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert statuses == ["reversed", "reversed"]
    assert values(approver.org.db()) == {}
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}


def test_a_conflict_is_shown_with_eves_change_and_only_an_explicit_override_overwrites_it(
    approver: Approver, page: Page
) -> None:
    org = approver.org
    run = approver.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": "2"})]
    )
    outside_edit(org.db(), "a", "3", by="eve")
    ref = approver.plan(run, "--step", "2", by=DANA)
    approver.sign_in(page, LEE)
    page.goto(f"{approver.url}/plans/{ref}")
    conflict = page.locator(".conflict-item[data-entry='e2']")
    assert conflict.locator(".changed-by").inner_text() == "eve"

    page.check("#override-e2")  # chosen, but not confirmed
    page.click("#approve")
    assert approver.code(page) == "OVERRIDE_NOT_CONFIRMED"
    assert decisions(approver, run) == []
    assert values(org.db()) == {"a": "3"}

    page.go_back()
    page.check("#override-e2")
    page.check("#confirm-e2")
    page.click("#approve")

    the_outcome(page)
    assert page.locator("tr.outcome-step[data-entry='e2'] .overrode").count() == 1
    assert values(org.db()) == {"a": "1"}


def test_a_conflict_left_alone_keeps_eves_change(approver: Approver, page: Page) -> None:
    org = approver.org
    run = approver.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": "2"})]
    )
    outside_edit(org.db(), "a", "3", by="eve")
    ref = approver.plan(run, "--step", "2", by=DANA)
    approver.sign_in(page, LEE)
    page.goto(f"{approver.url}/plans/{ref}")

    page.click("#approve")

    the_outcome(page)
    assert page.locator("tr.outcome-step[data-entry='e2']").get_attribute("data-status") == "conflicted"
    assert values(org.db()) == {"a": "3"}


def test_a_late_click_is_recorded_as_not_counted_and_the_person_is_told(
    approver: Approver, page: Page
) -> None:
    policy_that_asks_before_publishing(approver.org)
    run = approver.agent([("chain_put", {"key": "a", "value": "1"}), ("chain_publish", {"key": "a"})])
    [ask] = [e for e in approver.org.entries(run) if e.kind == "ask"]
    approver.sign_in(page, LEE)
    page.goto(f"{approver.url}/asks/{run}/{ask.id}")
    assert page.inner_text("#state") == "pending"

    approver.clock.ahead = timedelta(hours=5)  # the 4-hour deadline passes while the page is open
    page.click("#approve")

    assert approver.code(page) == "LATE_DECISION"
    closed = ask.body["decideBy"][11:16]
    assert f"closed at {closed} UTC" in page.inner_text("#message")
    assert "recorded but not counted" in page.inner_text("#message")
    [late] = [e for e in approver.org.entries(run) if e.kind == "decision"]
    assert late.body["counted"] is False


def test_a_summary_with_a_script_tag_renders_as_text(approver: Approver, page: Page) -> None:
    hostile = "<script>document.title='owned'</script><b>bold</b>"
    run = approver.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": hostile})]
    )
    approver.sign_in(page, LEE)
    page.goto(f"{approver.url}/runs/{run}")

    assert hostile in page.inner_text("tr.window[data-entry='e2']")
    assert page.locator("main script, main b").count() == 0
    assert "owned" not in page.title()


def test_a_cross_site_form_post_is_refused_and_decides_nothing(approver: Approver, page: Page) -> None:
    run = approver.agent([("chain_put", {"key": "a", "value": "1"})])
    ref = approver.plan(run, "--from", "1", by=DANA)
    approver.sign_in(page, LEE)
    forged = (
        f"<form method=post action='{approver.url}/plans/{ref}'>"
        "<input name=decision value=approve><button id=go>win a prize</button></form>"
    )
    page.route("http://elsewhere.test/**", lambda route: route.fulfill(body=forged, content_type="text/html"))
    page.goto("http://elsewhere.test/prize")

    page.click("#go")

    assert approver.code(page) == "CROSS_SITE"
    assert decisions(approver, run) == []
    assert values(approver.org.db()) == {"a": "1"}


def test_someone_without_the_role_is_told_and_their_decision_does_not_count(
    approver: Approver, page: Page
) -> None:
    run = approver.agent([("chain_put", {"key": "a", "value": "1"})])
    ref = approver.plan(run, "--from", "1", by=DANA)
    approver.sign_in(page, EVE)
    page.goto(f"{approver.url}/plans/{ref}")
    assert page.locator("#not-yours").count() == 1

    page.click("#approve")

    assert approver.code(page) == "NOT_COUNTED"
    assert decisions(approver, run) == [False]
    assert values(approver.org.db()) == {"a": "1"}
