"""The run timeline: every step in order with its class, summary, deadline and state, and an undo
planned from any open step, in a real browser at phone width (desktop width: the fit test)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page
from support.undo_org import DANA, LEE
from web_org import Approver, in_thread

pytestmark = pytest.mark.browser


def test_the_timeline_shows_each_step_in_order_as_it_stands_and_plans_an_undo_from_one(
    approver: Approver, page: Page
) -> None:
    run = approver.agent(
        [
            ("chain_put", {"key": "a", "value": "1"}),
            ("chain_put", {"key": "b", "value": "2"}),
            ("chain_publish", {"key": "a"}),
        ]
    )
    undone = approver.plan(run, "--step", "2", by=DANA)
    code, out, err = in_thread(lambda: approver.org.approve(undone))
    assert code == 0, out + err
    page.set_viewport_size({"width": 390, "height": 844})
    approver.sign_in(page, LEE)

    page.goto(f"{approver.url}/runs/{run}/timeline")

    steps = page.locator("li.step")
    assert [steps.nth(i).get_attribute("data-step") for i in range(steps.count())] == ["1", "2", "3"]
    assert [steps.nth(i).get_attribute("data-state") for i in range(3)] == [
        "open",
        "undone",
        "not reversible",
    ]
    assert steps.nth(2).get_attribute("data-class") == "R4"
    assert "cannot be undone" in steps.nth(2).inner_text()
    assert "undo until" in steps.nth(0).inner_text()
    assert page.locator("#plan-from-1").count() == 1
    assert page.locator("#plan-from-2").count() == 0  # undone already: nothing to plan from it
    assert page.locator("#plan-from-3").count() == 0

    page.click("#plan-from-1")
    page.wait_for_load_state()

    assert "/plans/" in page.url
    assert page.locator("li.step").count() == 1  # step 1 (step 2 is undone, step 3 is not reversible)
