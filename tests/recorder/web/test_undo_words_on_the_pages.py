"""The approver's pages name an undo in the same words as the plan: every field turned round."""

from __future__ import annotations

import re
from typing import Any

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


def test_a_call_that_changed_nothing_is_shown_so_in_the_text_plan_the_json_and_the_page_and_never_run(
    approver: Approver,
) -> None:
    org = approver.org
    told: list[Any] = []  # the refusal is an error answer: told, not raised
    run = org.agent([("chain_put", {"key": "a", "value": "1"}), ("chain_refuse", {"key": "c"})], told=told)
    code, alone, _ = org.cli("plan", run, "--step", "2", "--by", DANA)  # nothing else to undo: not filed
    ref, plan = org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)
    _, page = browser.get(f"/plans/{ref}")
    approved, out, err = org.approve(ref)

    assert code != 0
    shown = "Changed nothing (nothing to undo, never run):\n  step 2  chain.refuse   (the tool refused"
    assert shown in alone
    assert [(c["step"], c["entry"]) for c in plan["changedNothing"]] == [(2, "e2")]
    assert "changed nothing" in plan["changedNothing"][0]["reason"]
    assert [s["entry"] for s in plan["steps"]] == ["e1"]
    section = re.search(r'<section id="changed-nothing">(.*?)</section>', page, re.S)
    assert section is not None, page
    assert re.findall(r'data-entry="(e\d+)"', section.group(1)) == ["e2"]
    assert approved == 0, err + out
    assert org.reversal(run) == {"e1": "reversed"}  # the call that changed nothing was never run
