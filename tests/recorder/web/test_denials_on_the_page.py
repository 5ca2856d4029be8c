"""Deny on the approver's pages, over plain HTTP: a denied call is refused, a denied plan undoes nothing."""

from __future__ import annotations

from http_browser import code, decisions, form_fields, signed_in
from support.chain_server import published, values
from support.undo_org import DANA
from web_org import Approver, HeldAgent, policy_that_asks_before_publishing

from hatp_journal.toolkit.store import create_store_engine


def published_count(approver: Approver) -> int:
    engine = create_store_engine(approver.org.db())
    try:
        return published(engine)
    finally:
        engine.dispose()


def test_a_call_denied_on_the_page_is_refused_to_the_agent_and_never_reaches_the_server(
    approver: Approver,
) -> None:
    policy_that_asks_before_publishing(approver.org)
    approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    with HeldAgent(approver.org, "chain_publish", {"key": "a"}) as agent:
        ref = f"{agent.run}/{agent.first['structured']['ask']}"
        browser = signed_in(approver)
        fields = {**form_fields(browser.get(f"/asks/{ref}")[1]), "decision": "deny"}
        status, html = browser.post(f"/asks/{ref}", fields)
        second = agent.call_again()

    assert (status, code(html)) == (200, "COUNTED")
    assert agent.first["structured"]["status"] == "pending_approval"
    assert second["is_error"]
    assert published_count(approver) == 0
    assert decisions(approver, agent.run) == [True]
    kinds = [e.kind for e in approver.org.entries(agent.run)]
    assert kinds[-2:] == ["decision", "refused"]


def test_a_plan_denied_on_the_page_undoes_nothing_and_a_later_approve_does_not_count(
    approver: Approver,
) -> None:
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)
    page = browser.get(f"/plans/{ref}")[1]
    again = browser.get(f"/plans/{ref}")[1]

    denied = browser.post(f"/plans/{ref}", {**form_fields(page), "decision": "deny"})
    approved = browser.post(f"/plans/{ref}", {**form_fields(again), "decision": "approve"})

    assert (denied[0], code(denied[1])) == (200, "COUNTED")
    assert (approved[0], code(approved[1])) == (200, "NOT_COUNTED")
    assert decisions(approver, run) == [True, False]
    assert values(approver.org.db()) == {"a": "1"}
    assert "reversal" not in [e.kind for e in approver.org.entries(run)]
