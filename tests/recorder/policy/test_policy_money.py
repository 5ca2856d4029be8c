"""Money caps turn an allowed call into an ask, with exact decimal totals shown (protocol.md §7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from hatp_journal.recorder.policy import CallFacts, Decision, MoneyLedger, Policy, decide, parse_policy
from hatp_journal.toolkit.wire import Money

NOV_3 = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)
CAPS = """{"autonomy": {"compensate": "allow", "money": {
    "perRun": {"amount": "500", "currency": "USD"},
    "perPeriod": {"amount": "5000", "currency": "USD", "period": "P7D"}}}}"""


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(CAPS)


def usd(amount: str) -> Money:
    return Money(amount=amount, currency="USD")


def charge(amount: Money | None, *, run: str | None = "run-1", at: datetime = NOV_3) -> CallFacts:
    return CallFacts(
        run=run,
        server="shop",
        tool="charge_order",
        kind="compensate",
        via="api",
        window_seconds=86400,
        charges=True,
        amount=amount,
        at=at,
    )


def codes(decision: Decision) -> list[str]:
    return [reason.code for reason in decision.reasons]


def test_a_charge_within_both_caps_is_allowed_and_its_totals_are_still_journaled(policy: Policy) -> None:
    ledger = MoneyLedger()
    ledger.record("run-1", NOV_3 - timedelta(hours=1), usd("400.00"))

    decision = decide(policy, charge(usd("100")), ledger)

    assert decision.action == "allow"
    assert decision.totals is not None
    assert decision.totals["perRun"] == {
        "spent": "400.00",
        "call": "100",
        "total": "500.00",
        "cap": "500",
        "currency": "USD",
        "run": "run-1",
    }


def test_a_charge_that_would_pass_the_run_cap_asks_with_the_totals(policy: Policy) -> None:
    ledger = MoneyLedger()
    ledger.record("run-1", NOV_3 - timedelta(minutes=5), usd("450"))
    # Another run's spending is not this run's.
    ledger.record("run-2", NOV_3 - timedelta(minutes=5), usd("300"))

    decision = decide(policy, charge(usd("100.01")), ledger)

    assert (decision.action, codes(decision)) == ("ask", ["MONEY_PER_RUN"])
    assert decision.totals is not None
    assert decision.totals["perRun"]["spent"] == "450"
    assert decision.totals["perRun"]["call"] == "100.01"
    assert decision.totals["perRun"]["total"] == "550.01"
    assert decision.totals["perRun"]["cap"] == "500"
    assert decision.reasons[0].data["total"] == "550.01"
    assert decision.totals["perPeriod"]["spent"] == "750"


def test_a_charge_that_would_pass_the_rolling_period_cap_asks_with_the_totals(policy: Policy) -> None:
    ledger = MoneyLedger()
    for day in range(1, 7):  # six earlier runs within the last week, 800.50 each
        ledger.record(f"old-{day}", NOV_3 - timedelta(days=day), usd("800.50"))
    # Exactly one period ago: outside the rolling window.
    ledger.record("older", NOV_3 - timedelta(days=7), usd("4000"))

    decision = decide(policy, charge(usd("200")), ledger)

    assert (decision.action, codes(decision)) == ("ask", ["MONEY_PER_PERIOD"])
    assert decision.totals is not None
    assert decision.totals["perPeriod"] == {
        "spent": "4803.00",
        "call": "200",
        "total": "5003.00",
        "cap": "5000",
        "currency": "USD",
        "period": "P7D",
        "since": "2026-10-27T12:00:00Z",
    }


def test_a_charge_that_passes_both_caps_names_both(policy: Policy) -> None:
    ledger = MoneyLedger()
    ledger.record("run-1", NOV_3 - timedelta(days=1), usd("4999.99"))

    decision = decide(policy, charge(usd("0.02")), ledger)

    assert codes(decision) == ["MONEY_PER_RUN", "MONEY_PER_PERIOD"]


def test_reaching_a_cap_exactly_is_allowed_and_passing_it_by_a_cent_asks(policy: Policy) -> None:
    ledger = MoneyLedger()
    ledger.record("run-1", NOV_3, usd("499.99"))

    assert decide(policy, charge(usd("0.01")), ledger).action == "allow"
    assert codes(decide(policy, charge(usd("0.02")), ledger)) == ["MONEY_PER_RUN"]


def test_a_charge_that_states_no_amount_asks_as_unclassified(policy: Policy) -> None:
    decision = decide(policy, charge(None), MoneyLedger())

    assert (decision.action, codes(decision)) == ("ask", ["UNCLASSIFIED"])


def test_a_charge_in_another_currency_than_the_cap_asks_and_is_never_converted(policy: Policy) -> None:
    decision = decide(policy, charge(Money(amount="1", currency="EUR")), MoneyLedger())

    assert (decision.action, codes(decision)) == ("ask", ["UNCLASSIFIED", "UNCLASSIFIED"])


def test_a_charge_without_a_run_asks_when_a_per_run_cap_applies(policy: Policy) -> None:
    assert codes(decide(policy, charge(usd("1"), run=None), MoneyLedger())) == ["UNCLASSIFIED"]


def test_a_call_that_moves_no_money_shows_no_totals(policy: Policy) -> None:
    call = CallFacts(
        run="r", server="crm", tool="update_deal", kind="compensate", via="api", window_seconds=1, at=NOV_3
    )

    decision = decide(policy, call, MoneyLedger())

    assert (decision.action, decision.totals) == ("allow", None)


def test_a_policy_without_caps_does_not_hold_charges() -> None:
    policy = parse_policy('{"autonomy": {"compensate": "allow"}}')

    assert decide(policy, charge(usd("1000000")), MoneyLedger()).action == "allow"


def test_amounts_with_many_decimals_add_exactly_and_print_without_exponents() -> None:
    ledger = MoneyLedger()
    ledger.record("r", NOV_3, usd("0.0000001"))
    ledger.record("r", NOV_3, usd("0.0000002"))
    policy = parse_policy('{"autonomy": {"money": {"perRun": {"amount": "0.0000002", "currency": "USD"}}}}')

    decision = decide(policy, charge(usd("0.0000001"), run="r"), ledger)

    assert ledger.spent_in_run("r", "USD") == Decimal("0.0000003")
    assert decision.totals is not None
    assert decision.totals["perRun"]["total"] == "0.0000004"


def test_the_ledger_sums_per_run_per_currency_and_since_the_rolling_window_began() -> None:
    ledger = MoneyLedger()
    ledger.record("a", NOV_3 - timedelta(days=3), usd("1.10"))
    ledger.record("a", NOV_3 - timedelta(days=1), Money(amount="5", currency="EUR"))
    ledger.record("b", NOV_3, usd("2.20"))
    # Stamped after `at`: decided while this call waited, or by a clock ahead; spent all the same.
    ledger.record("b", NOV_3 + timedelta(seconds=1), usd("100"))

    assert ledger.spent_in_run("a", "USD") == Decimal("1.10")
    assert ledger.spent_in_run("a", "EUR") == Decimal("5")
    assert ledger.spent_in_run("c", "USD") == Decimal("0")
    assert ledger.spent_in_period(NOV_3, timedelta(days=2), "USD") == Decimal("102.20")
    assert ledger.spent_in_period(NOV_3, timedelta(days=4), "USD") == Decimal("103.30")


def test_the_ledger_refuses_naive_times() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the text
        MoneyLedger().record("r", datetime(2026, 11, 3), usd("1"))
