"""Rules compose so that every doubt asks: an empty AllOf asks, and nothing irreversible slips through."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import hatp_journal.recorder.policy as policy_package
from hatp_journal.recorder.policy import (
    AllOf,
    Autonomy,
    CallFacts,
    MoneyCaps,
    MoneyLedger,
    PeriodCap,
    Policy,
    UnsafeNoOp,
    Verdict,
    decide,
    parse_policy,
)
from hatp_journal.recorder.policy.money import MoneySpent
from hatp_journal.toolkit.wire import Money

actions = st.sampled_from(["allow", "ask"])
money = st.builds(
    lambda amount, currency: Money(amount=amount, currency=currency),
    st.decimals(min_value=0, max_value=10**6, places=2).map(lambda value: format(value, "f")),
    st.sampled_from(["USD", "EUR"]),
)
aware_times = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


def facts_with(kinds: st.SearchStrategy[str]) -> st.SearchStrategy[CallFacts]:
    """Facts as a buggy or hostile gateway might build them, as well as well-formed ones."""
    fields: dict[str, st.SearchStrategy[Any]] = {
        "run": st.one_of(st.none(), st.just("run-1"), st.just("")),
        "server": st.sampled_from(["crm", "email", "", "plain"]),
        "tool": st.sampled_from(["update_deal", "send_email", "export_report"]),
        "kind": kinds,
        "via": st.sampled_from([None, "api", "ui", "ftp"]),
        "window_seconds": st.one_of(st.none(), st.integers(min_value=-5, max_value=10**7)),
        "charges": st.booleans(),
        "amount": st.one_of(st.none(), money),
        "verified": st.booleans(),
        "at": st.one_of(aware_times, st.datetimes()),
    }
    return st.fixed_dictionaries(fields).map(lambda values: CallFacts(**values))


any_kind = st.one_of(st.sampled_from(["compensate", "none", "unknown", "read"]), st.text(max_size=12))
not_undoable = st.one_of(st.sampled_from(["none", "unknown"]), st.text(max_size=12)).filter(
    lambda kind: kind not in ("compensate", "read")
)
autonomies = st.builds(
    Autonomy,
    compensate=actions,
    read=actions,
    via=st.builds(lambda ui: {"ui": ui}, actions),
    min_window_seconds=st.integers(min_value=0, max_value=10**6),
    require_verified=st.booleans(),
    money=st.one_of(
        st.just(MoneyCaps()),
        st.builds(
            MoneyCaps,
            per_run=st.one_of(st.none(), money),
            per_period=st.one_of(
                st.none(),
                money.map(lambda cap: PeriodCap(amount=cap.amount, currency=cap.currency, period="P7D")),
            ),
        ),
    ),
)


def ledger_with_history() -> MoneySpent:
    ledger = MoneyLedger()
    ledger.record("run-1", datetime(2026, 11, 3, tzinfo=UTC), Money(amount="120.50", currency="USD"))
    return ledger


@settings(max_examples=100)
@given(autonomy=autonomies, facts=facts_with(not_undoable))
def test_a_call_that_cannot_be_undone_is_never_allowed_without_an_override(
    autonomy: Autonomy, facts: CallFacts
) -> None:
    policy = Policy(autonomy=autonomy)  # none and unknown left at their default: ask

    assert decide(policy, facts, ledger_with_history()).action == "ask"


@given(facts=facts_with(any_kind))
def test_an_empty_policy_asks_for_every_call(facts: CallFacts) -> None:
    assert decide(parse_policy("{}"), facts, MoneyLedger()).action == "ask"


@given(facts=facts_with(any_kind))
def test_an_empty_all_of_asks_for_every_call(facts: CallFacts) -> None:
    verdict = AllOf([]).evaluate(facts, MoneyLedger())

    assert verdict.action == "ask"
    assert [reason.code for reason in verdict.reasons] == ["UNCLASSIFIED"]


@settings(max_examples=100)
@given(autonomy=autonomies, facts=facts_with(any_kind))
def test_malformed_facts_ask_and_never_raise(autonomy: Autonomy, facts: CallFacts) -> None:
    decision = decide(Policy(autonomy=autonomy), facts, ledger_with_history())

    malformed = (
        facts.at.tzinfo is None
        or facts.kind not in ("compensate", "none", "unknown", "read")
        or facts.via not in (None, "api", "ui")
        or (facts.window_seconds or 0) < 0
        or not facts.server
        or facts.run == ""
    )
    if malformed:
        assert decision.action == "ask"
        assert "UNCLASSIFIED" in [reason.code for reason in decision.reasons]


@given(facts=facts_with(any_kind))
def test_unsafe_no_op_allows_everything_and_all_of_asks_when_any_rule_asks(facts: CallFacts) -> None:
    asking = AllOf([])

    assert UnsafeNoOp().evaluate(facts, MoneyLedger()) == Verdict.allow()
    assert AllOf([UnsafeNoOp()]).evaluate(facts, MoneyLedger()).action == "allow"
    assert AllOf([UnsafeNoOp(), asking, UnsafeNoOp()]).evaluate(facts, MoneyLedger()).action == "ask"


def test_all_of_collects_the_reasons_of_every_rule_that_asks() -> None:
    facts = CallFacts(
        run="r", server="app", tool="t", kind="compensate", via="ui", window_seconds=60, at=datetime.now(UTC)
    )
    policy = parse_policy('{"autonomy": {"minWindowSeconds": 3600, "requireVerified": true}}')

    codes = [reason.code for reason in decide(policy, facts, MoneyLedger()).reasons]

    assert codes == ["KIND_ASKS", "UI_UNDO", "WINDOW_TOO_SHORT", "NOT_VERIFIED"]


def test_a_period_cap_counts_only_the_rolling_window_before_the_call() -> None:
    policy = parse_policy(
        '{"autonomy": {"compensate": "allow", "money": '
        '{"perPeriod": {"amount": "100", "currency": "USD", "period": "PT1H"}}}}'
    )
    ledger = MoneyLedger()
    now = datetime(2026, 11, 3, 12, tzinfo=UTC)
    ledger.record("a", now - timedelta(minutes=61), Money(amount="99", currency="USD"))
    call = CallFacts(
        run="b",
        server="shop",
        tool="charge_order",
        kind="compensate",
        via="api",
        charges=True,
        amount=Money(amount="99", currency="USD"),
        at=now,
    )

    assert decide(policy, call, ledger).action == "allow"
    ledger.record("a", now - timedelta(minutes=59), Money(amount="2", currency="USD"))
    assert decide(policy, call, ledger).action == "ask"


def test_the_public_api_is_pinned() -> None:
    assert sorted(policy_package.__all__) == [
        "Action",
        "AllOf",
        "AttestationProblem",
        "AttestationTrust",
        "Autonomy",
        "CallFacts",
        "ClassVerdict",
        "Decision",
        "Hints",
        "Kind",
        "MoneyCaps",
        "MoneyLedger",
        "MoneySpent",
        "PeriodCap",
        "Policy",
        "PolicyFileError",
        "PolicyOverride",
        "Problem",
        "RClass",
        "Reason",
        "ReasonCode",
        "Rule",
        "UnsafeNoOp",
        "Verdict",
        "ViaRules",
        "classify",
        "classify_call",
        "decide",
        "load_policy",
        "parse_policy",
        "policy_rules",
    ]
    for name in policy_package.__all__:
        assert getattr(policy_package, name) is not None
