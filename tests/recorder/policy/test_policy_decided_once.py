"""What the gateway may work out once per tool: the class no argument can change, and a decision
nothing in the call can change; anything a call's arguments, amount or time could change is not."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from test_policy_attestations import ISSUED, attestation, policy_with
from test_policy_attestations import call as attested_call
from test_policy_classes import AT, SQLITE, call, policy

from hatp_journal.recorder.policy import CallFacts, MoneyLedger, Policy, decide, load_policy, parse_policy
from hatp_journal.recorder.policy.classify import class_of_every_call, classify_call
from hatp_journal.recorder.policy.decide import same_for_every_call
from hatp_journal.toolkit.wire import Money

SELECT = {"query": "SELECT 1"}
DELETE = {"query": "DELETE FROM deals"}


def test_a_tool_whose_registry_rules_read_its_arguments_has_no_class_for_every_call() -> None:
    on = policy()
    facts = call(server="db", tool="read_query", arguments=SELECT)
    assert class_of_every_call(on, facts) is None
    read, delete = (classify_call(on, replace(facts, arguments=given)) for given in (SELECT, DELETE))
    assert read.rclass != delete.rclass  # what the per-call class is for


@pytest.mark.parametrize(("server", "tool"), [("db", "write_query"), ("db", "list_tables"), ("app", "act")])
def test_a_tool_no_argument_can_move_has_the_class_every_call_gets(server: str, tool: str) -> None:
    on = policy()
    fixed = class_of_every_call(on, call(server=server, tool=tool))
    assert fixed is not None
    for arguments in (SELECT, DELETE, {}):
        assert classify_call(on, call(server=server, tool=tool, arguments=arguments)) == fixed


def kinds_policy(**more: Any) -> Policy:
    autonomy = {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask", **more}
    return parse_policy(json.dumps({"autonomy": autonomy, "registry": {"servers": SQLITE}}))


def classified(facts: CallFacts, on: Policy) -> CallFacts:
    return replace(facts, reversibility=class_of_every_call(on, facts))


OVERRIDE = {
    "server": "app",
    "tool": "act",
    "action": "allow",
    "by": "human://acme.com/ana",
    "reason": "quarter close",
    "from": "2026-12-02T00:00:00Z",
}


def test_a_call_with_no_amount_a_known_class_and_no_override_is_decided_the_same_every_time() -> None:
    on = kinds_policy()
    facts = classified(call(), on)
    assert same_for_every_call(on, facts)
    first = decide(on, facts, MoneyLedger())
    for later in (timedelta(0), timedelta(days=400)):
        again = replace(facts, at=AT + later, run="run-2", arguments=DELETE)
        assert decide(on, again, MoneyLedger()) == first
    assert decide(on, replace(facts, reversibility=None), MoneyLedger()) == first


def test_a_call_with_an_amount_or_no_class_yet_is_decided_each_time() -> None:
    on = kinds_policy()
    assert not same_for_every_call(on, call())  # no class worked out yet
    charged = classified(call(amount=Money(amount="10", currency="USD")), on)
    assert not same_for_every_call(on, charged)


def test_an_override_naming_the_tool_makes_its_calls_decided_each_time() -> None:
    on = parse_policy(
        json.dumps({"autonomy": {"unknown": "ask", "compensate": "allow"}, "overrides": [OVERRIDE]})
    )
    facts = classified(call(), on)
    assert not same_for_every_call(on, facts)
    before, after = (decide(on, replace(facts, at=at), MoneyLedger()) for at in (AT, AT + timedelta(days=2)))
    assert (before.action, after.action) == ("ask", "allow")  # the time changed the decision
    assert same_for_every_call(on, classified(call(tool="other"), on))


def test_a_policy_with_attestations_decides_each_call_since_they_grow_old(tmp_path: Path) -> None:
    on = load_policy(policy_with(tmp_path, attestation({"update_deal": "compensate"})))
    facts = classified(attested_call("update_deal"), on)
    assert not same_for_every_call(on, facts)
    fresh, stale = (
        decide(on, replace(facts, at=ISSUED + timedelta(days=days)), MoneyLedger()) for days in (1, 40)
    )
    assert (fresh.action, stale.action) == ("allow", "ask")


def test_a_class_policy_decides_a_tool_once_only_where_the_arguments_cannot_move_its_class() -> None:
    on = policy()
    assert not same_for_every_call(on, classified(call(server="db", tool="read_query"), on))
    assert same_for_every_call(on, classified(call(server="db", tool="list_tables"), on))
