"""What the approver's pages say of an undo with nothing in it, and of an approval whose Recorder
stopped after claiming it: a plan with nothing to undo is never put before a person, and an approval
in doubt is shown, as ``hatp-recorder asks`` shows it. Over plain HTTP (no browser: fast)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from http_browser import code, form_fields, signed_in
from sqlmodel import Session
from support.undo_org import DANA, LEE
from web_org import Approver, policy_that_asks_before_publishing

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.runs.keys import RecAskClaim, RunKeys


def test_plan_undo_from_here_with_nothing_to_undo_files_no_plan_and_lists_each_step_with_why(
    approver: Approver,
) -> None:
    # Step 2 crashed: whether it changed anything is unknown, and it may have relied on step 1.
    told: list[Any] = []
    run = approver.org.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put_and_crash", {"key": "b", "value": "1"})],
        told=told,
    )
    browser = signed_in(approver, DANA)
    _, timeline = browser.get(f"/runs/{run}/timeline")
    assert 'id="plan-from-1"' in timeline  # the button is offered: the step's window is open

    status, html = browser.post(f"/runs/{run}/plan", {**form_fields(timeline), "from": "1"})

    assert (status, code(html)) == (409, "NOTHING_TO_UNDO")
    kept = dict(re.findall(r'<li class="kept" data-step="(\w+)" data-section="(\w+)"', html))
    assert kept == {"1": "blocked", "2": "unresolved"}
    assert not [e for e in approver.org.entries(run) if e.kind == "plan"]
    _, asks = signed_in(approver, LEE).get("/asks")
    assert "No plan is waiting." in asks


def test_an_approval_whose_recorder_stopped_after_sending_it_is_shown_in_doubt_and_so_is_the_next_ask(
    approver: Approver,
) -> None:
    policy_that_asks_before_publishing(approver.org)
    held = approver.org
    told: list[Any] = []
    run = held.agent([("chain_publish", {"key": "a"})], told=told)
    answer = told[0].meta["hatp/recorder"]
    ask, key = answer["ask"], answer["runKey"]
    status, _, err = held.cli("approve", f"{run}/{ask}", "--as", LEE, "--key", held.key(LEE))
    assert status == 0, err
    # The Recorder that claimed the approval (on another host) sent the call an hour ago and stopped.
    store = held.store()
    try:
        RunKeys(store)
        long_ago = wire_time(utc_now() - timedelta(hours=1))
        with Session(store.engine) as session:
            session.add(RecAskClaim(run=run, ask=ask, at=long_ago, holder="elsewhere:1:gone", sent=long_ago))
            session.commit()
    finally:
        store.dispose()
    lee = signed_in(approver, LEE)

    _, before = lee.get("/asks")
    again: list[Any] = []
    held.agent([("chain_publish", {"key": "a"})] * 2, told=again, meta={"hatp/runKey": key})
    _, after = lee.get("/asks")

    [doubt] = re.findall(rf'<li class="doubt" data-ref="{run}/{ask}">(.*?)</li>', before, re.S)
    assert "chain.publish" in doubt
    assert "whether it was made is unknown (in doubt)" in doubt
    said = [r.structured_content for r in again]
    assert [said[0]["code"], said[1]["status"]] == ["CALL_IN_DOUBT", "pending_approval"]
    new = said[1]["ask"]
    assert 'class="doubt"' not in after  # settled as in doubt: no longer an approval waiting to be made
    [line] = re.findall(rf'<li class="ask" data-ref="{run}/{new}">(.*?)</li>', after, re.S)
    assert f'<span class="in-doubt" data-ask="{run}/{ask}">' in line
    assert "the Recorder that was making this approved call sent it" in line
