"""Recorders racing for the last room under a money cap: at most one gets through."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.policy import CallFacts, parse_policy
from hatp_journal.recorder.policy.stored_ledger import StoredLedger
from hatp_journal.toolkit.store import create_store_engine
from hatp_journal.toolkit.wire import Money

RACERS = 8
WAIT = 60  # seconds: every wait is bounded
ALLOWED, ASKED = 10, 11  # a racer's exit code; anything else is a crash
POLICY = parse_policy("""{"autonomy": {"compensate": "allow", "money": {
    "perPeriod": {"amount": "600", "currency": "USD", "period": "P7D"}}}}""")


def charge(ledger: StoredLedger, run: str, amount: str) -> bool:
    """One charge through the ledger, on the real clock; whether it was allowed."""
    facts = CallFacts(
        run=run,
        server="crm",
        tool="charge_order",
        kind="compensate",
        via="api",
        window_seconds=86400,
        charges=True,
        amount=Money(amount=amount, currency="USD"),
        at=utc_now(),
    )
    decision, held = ledger.decide(POLICY, facts)
    ledger.settle(held, moved=True)
    return decision.action == "allow"


def charge_200(path: Path, racer: int, start: Any) -> int:
    """One Recorder's charge of 200 USD in its own run, on its own engine."""
    engine = create_store_engine(path)
    try:
        ledger = StoredLedger(engine)
        start.wait(WAIT)
        return ALLOWED if charge(ledger, f"run-{racer}", "200") else ASKED
    finally:
        engine.dispose()


def charge_1_forty_times(path: Path, racer: int, start: Any) -> int:
    """One Recorder's forty charges of 1 USD, one after the other; how many were allowed."""
    engine = create_store_engine(path)
    try:
        ledger = StoredLedger(engine)
        start.wait(WAIT)
        return sum(charge(ledger, f"run-{racer}", "1") for _ in range(40))
    finally:
        engine.dispose()


def racer_process(path: Path, racer: int, start: Any) -> None:
    raise SystemExit(charge_200(path, racer, start))


def ledger_with_400_spent(path: Path) -> None:
    engine = create_store_engine(path)
    ledger = StoredLedger(engine)
    earlier = CallFacts(
        run="run-0",
        server="crm",
        tool="charge_order",
        kind="compensate",
        at=utc_now() - timedelta(hours=1),
        amount=Money(amount="400", currency="USD"),
    )
    ledger.settle(ledger.hold(earlier), moved=True)
    engine.dispose()  # no connection may cross the fork


def spent_in_the_week(path: Path) -> Decimal:
    engine = create_store_engine(path)
    try:
        return StoredLedger(engine).spent_in_period(utc_now(), timedelta(days=7), "USD")
    finally:
        engine.dispose()


def test_eight_processes_racing_for_the_last_200_under_the_cap_let_exactly_one_through(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recorder.db"
    ledger_with_400_spent(path)
    context = multiprocessing.get_context("fork")  # children reuse the loaded modules
    start = context.Barrier(RACERS)
    racers = [context.Process(target=racer_process, args=(path, n, start)) for n in range(RACERS)]

    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(WAIT)

    outcomes = sorted(racer.exitcode for racer in racers)
    assert outcomes == [ALLOWED] + [ASKED] * (RACERS - 1)
    assert spent_in_the_week(path) == Decimal("600")


def test_eight_threads_racing_for_the_last_200_under_the_cap_let_exactly_one_through(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recorder.db"
    ledger_with_400_spent(path)
    start = threading.Barrier(RACERS)

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        futures = [pool.submit(charge_200, path, n, start) for n in range(RACERS)]
        outcomes = sorted(future.result(timeout=WAIT) for future in futures)

    assert outcomes == [ALLOWED] + [ASKED] * (RACERS - 1)
    assert spent_in_the_week(path) == Decimal("600")


def looping_process(path: Path, racer: int, start: Any) -> None:
    charge_1_forty_times(path, racer, start)


def test_eight_processes_charging_1_again_and_again_spend_exactly_the_room_under_the_cap(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recorder.db"
    ledger_with_400_spent(path)
    context = multiprocessing.get_context("fork")
    start = context.Barrier(RACERS)
    racers = [context.Process(target=looping_process, args=(path, n, start)) for n in range(RACERS)]

    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(WAIT)

    assert [racer.exitcode for racer in racers] == [0] * RACERS
    assert spent_in_the_week(path) == Decimal("600")  # 200 of the 320 tries went through
