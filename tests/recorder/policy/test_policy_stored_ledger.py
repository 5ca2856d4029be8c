"""The money ledger in the Recorder's store: shared, durable, exact, and one decision at a time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine

from hatp_journal.recorder.policy import CallFacts, Decision, Policy, parse_policy
from hatp_journal.recorder.policy.stored_ledger import StoredLedger
from hatp_journal.toolkit.store import create_store_engine
from hatp_journal.toolkit.wire import Money

NOV_3 = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)
WEEK = timedelta(days=7)
CAPS = parse_policy("""{"autonomy": {"compensate": "allow", "money": {
    "perRun": {"amount": "500", "currency": "USD"},
    "perPeriod": {"amount": "600", "currency": "USD", "period": "P7D"}}}}""")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(tmp_path / "recorder.db")
    yield engine
    engine.dispose()


@pytest.fixture
def ledger(engine: Engine) -> StoredLedger:
    return StoredLedger(engine)


def usd(amount: str) -> Money:
    return Money(amount=amount, currency="USD")


def charge(amount: Money | None, *, run: str | None = "run-1", at: datetime = NOV_3) -> CallFacts:
    return CallFacts(
        run=run,
        server="crm",
        tool="charge_order",
        kind="compensate",
        via="api",
        window_seconds=86400,
        charges=True,
        amount=amount,
        at=at,
    )


def spent(ledger: StoredLedger, amount: str, *, run: str = "run-1", at: datetime = NOV_3) -> None:
    """A call that went through: held as a person approved it, then settled as moved."""
    ledger.settle(ledger.hold(charge(usd(amount), run=run, at=at)), moved=True)


def codes(decision: Decision) -> list[str]:
    return [reason.code for reason in decision.reasons]


def test_an_allowed_charge_is_held_at_once_and_counts_before_its_call_returns(ledger: StoredLedger) -> None:
    decision, held = ledger.decide(CAPS, charge(usd("400")))

    assert decision.action == "allow"
    assert held is not None
    assert ledger.spends() == [("run-1", "400", "held")]
    assert ledger.spent_in_run("run-1", "USD") == Decimal("400")
    assert ledger.spent_in_period(NOV_3, WEEK, "USD") == Decimal("400")


def test_a_call_that_went_through_keeps_its_hold_as_spent(ledger: StoredLedger) -> None:
    _, held = ledger.decide(CAPS, charge(usd("400")))

    ledger.settle(held, moved=True)

    assert ledger.spends() == [("run-1", "400", "spent")]
    assert codes(ledger.decide(CAPS, charge(usd("300"), run="run-2"))[0]) == ["MONEY_PER_PERIOD"]


def test_a_failed_call_releases_its_hold_and_counts_for_nothing(ledger: StoredLedger) -> None:
    _, held = ledger.decide(CAPS, charge(usd("400")))

    ledger.settle(held, moved=False)

    assert ledger.spends() == []
    assert ledger.decide(CAPS, charge(usd("500")))[0].action == "allow"


def test_a_hold_whose_call_never_reported_back_keeps_counting(engine: Engine) -> None:
    StoredLedger(engine).decide(CAPS, charge(usd("400")))  # the Recorder died mid-call

    after_restart = StoredLedger(engine)

    assert after_restart.spends() == [("run-1", "400", "held")]
    decision, held = after_restart.decide(CAPS, charge(usd("300"), run="run-2"))
    assert (decision.action, codes(decision), held) == ("ask", ["MONEY_PER_PERIOD"], None)


def test_a_charge_the_caps_hold_back_is_not_held_and_the_totals_show_why(ledger: StoredLedger) -> None:
    spent(ledger, "400", run="run-a")

    decision, held = ledger.decide(CAPS, charge(usd("300"), run="run-b"))

    assert (decision.action, codes(decision), held) == ("ask", ["MONEY_PER_PERIOD"], None)
    assert decision.totals is not None
    period = decision.totals["perPeriod"]
    assert (period["spent"], period["call"], period["total"], period["cap"]) == ("400", "300", "700", "600")
    assert decision.totals["perRun"]["spent"] == "0"  # run-b has spent nothing yet
    assert ledger.spends() == [("run-a", "400", "spent")]


def test_an_approved_charge_is_held_even_past_the_cap(ledger: StoredLedger) -> None:
    spent(ledger, "400", run="run-a")

    held = ledger.hold(charge(usd("300"), run="run-b"))

    assert held is not None
    assert ledger.spent_in_period(NOV_3, WEEK, "USD") == Decimal("700")


def test_a_second_ledger_on_the_same_store_sees_every_spend_after_a_restart(tmp_path: Path) -> None:
    first = create_store_engine(tmp_path / "recorder.db")
    spent(StoredLedger(first), "400")
    first.dispose()

    second = create_store_engine(tmp_path / "recorder.db")
    try:
        again = StoredLedger(second)
        assert again.spent_in_run("run-1", "USD") == Decimal("400")
        assert again.spent_in_period(NOV_3 + timedelta(days=1), WEEK, "USD") == Decimal("400")
    finally:
        second.dispose()


def test_the_period_starts_just_after_at_minus_period_and_later_stamps_count(ledger: StoredLedger) -> None:
    spent(ledger, "1000", at=NOV_3 - WEEK)  # exactly one period ago: outside the window
    spent(ledger, "200", at=NOV_3 - WEEK + timedelta(microseconds=1))  # just inside
    spent(ledger, "30", at=NOV_3)  # at `at` itself
    # Stamped after `at`: another Recorder decided while this call waited, or its clock runs ahead.
    spent(ledger, "4", at=NOV_3 + timedelta(seconds=1))

    assert ledger.spent_in_period(NOV_3, WEEK, "USD") == Decimal("234")
    assert ledger.spent_in_period(NOV_3 + timedelta(microseconds=1), WEEK, "USD") == Decimal("34")


def test_the_window_is_the_same_whatever_timezone_the_times_are_given_in(ledger: StoredLedger) -> None:
    tokyo = NOV_3.astimezone(timezone(timedelta(hours=9)))  # 21:00 in Tokyo is 12:00 UTC
    spent(ledger, "5", at=NOV_3 - WEEK)
    spent(ledger, "7", at=tokyo - WEEK + timedelta(microseconds=1))

    assert ledger.spent_in_period(tokyo, WEEK, "USD") == Decimal("7")


def test_currencies_are_summed_apart_and_never_converted(ledger: StoredLedger) -> None:
    spent(ledger, "400")
    ledger.settle(ledger.hold(charge(Money(amount="999", currency="EUR"))), moved=True)

    assert ledger.spent_in_run("run-1", "USD") == Decimal("400")
    assert ledger.spent_in_run("run-1", "EUR") == Decimal("999")
    assert ledger.spent_in_period(NOV_3, WEEK, "GBP") == Decimal("0")
    assert ledger.decide(CAPS, charge(usd("100")))[0].action == "allow"  # the euros don't count


def test_amounts_are_kept_as_written_and_add_exactly(ledger: StoredLedger) -> None:
    spent(ledger, "0.1")
    spent(ledger, "0.2")
    spent(ledger, "123456789012345678901234567890.000000001")

    assert ledger.spends()[0][1] == "0.1"
    assert ledger.spent_in_run("run-1", "USD") == Decimal("123456789012345678901234567890.300000001")


def test_reaching_the_cap_exactly_is_allowed_and_a_cent_more_asks(ledger: StoredLedger) -> None:
    spent(ledger, "0.1", run="run-a")
    spent(ledger, "0.2", run="run-b")

    assert ledger.decide(CAPS, charge(usd("499.7"), run="run-b"))[0].action == "allow"  # run: 499.9
    assert ledger.decide(CAPS, charge(usd("100"), run="run-c"))[0].action == "allow"  # period: 600.0
    assert codes(ledger.decide(CAPS, charge(usd("0.01"), run="run-d"))[0]) == ["MONEY_PER_PERIOD"]


def test_spends_too_long_to_add_exactly_make_the_next_charge_ask_as_unclassified(
    ledger: StoredLedger,
) -> None:
    ledger.hold(charge(usd("1." + "1" * 250)))  # approved by a person, past what adds exactly

    decision, held = ledger.decide(CAPS, charge(usd("1")))

    assert (decision.action, codes(decision), held) == ("ask", ["UNCLASSIFIED"], None)
    with pytest.raises(ArithmeticError):
        ledger.spent_in_run("run-1", "USD")


def test_a_call_that_moves_no_money_is_decided_and_nothing_is_held(ledger: StoredLedger) -> None:
    update = CallFacts(run="run-1", server="crm", tool="update_deal", kind="compensate", via="api", at=NOV_3)

    decision, held = ledger.decide(CAPS, update)

    assert (decision.action, decision.totals, held) == ("allow", None, None)
    assert ledger.hold(update) is None
    assert ledger.spends() == []


def test_a_charge_that_states_no_amount_asks_and_nothing_is_held(ledger: StoredLedger) -> None:
    decision, held = ledger.decide(CAPS, charge(None))

    assert (decision.action, codes(decision), held) == ("ask", ["UNCLASSIFIED"], None)


def test_a_charge_without_a_run_has_nothing_to_be_held_under(ledger: StoredLedger) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the text
        ledger.decide(CAPS, charge(usd("1"), run=None))
    with pytest.raises(ValueError):  # noqa: PT011
        ledger.hold(charge(usd("1"), run=None))
    assert ledger.spends() == []


def test_the_ledger_refuses_naive_times(ledger: StoredLedger) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        ledger.hold(charge(usd("1"), at=datetime(2026, 11, 3)))
    with pytest.raises(ValueError):  # noqa: PT011
        ledger.spent_in_period(datetime(2026, 11, 3), WEEK, "USD")


def test_settling_nothing_or_settling_twice_changes_nothing(ledger: StoredLedger) -> None:
    _, held = ledger.decide(CAPS, charge(usd("400")))
    ledger.settle(held, moved=True)

    ledger.settle(held, moved=False)  # a late second outcome does not undo the first
    ledger.settle(None, moved=True)

    assert ledger.spends() == [("run-1", "400", "spent")]


def test_the_policy_without_caps_still_records_what_was_spent(ledger: StoredLedger) -> None:
    lenient: Policy = parse_policy('{"autonomy": {"compensate": "allow"}}')

    decision, held = ledger.decide(lenient, charge(usd("1000000")))

    assert (decision.action, held is not None) == ("allow", True)
    assert ledger.spent_in_run("run-1", "USD") == Decimal("1000000")
