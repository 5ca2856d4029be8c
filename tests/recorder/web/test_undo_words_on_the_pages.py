"""The approver's pages name an undo in the same words as the plan: every field turned round."""

from __future__ import annotations

import re

from http_browser import signed_in
from support.chain_server import stock
from support.undo_org import DANA
from web_org import Approver

UNDO = "Shelf bolts available: 6 → 10; reserved: 4 → 0"


def test_the_plan_and_outcome_pages_turn_both_fields_of_a_two_field_change_round(approver: Approver) -> None:
    stock(approver.org.db(), "bolts", 10)
    run = approver.org.agent([("chain_reserve", {"item": "bolts", "count": 4})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)

    _, plan_page = browser.get(f"/plans/{ref}")
    code, out, err = approver.org.approve(ref)
    assert code == 0, err + out
    _, outcome_page = browser.get(f"/plans/{ref}/outcome")

    assert re.findall(r'<span class="undo">([^<]*)</span>', plan_page) == [UNDO]
    row = re.search(r'<tr class="outcome-step"[^>]*data-status="reversed">(.*?)</tr>', outcome_page, re.S)
    assert row is not None, outcome_page
    assert UNDO in row.group(1)
