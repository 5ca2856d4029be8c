"""Money already moved, per run and per rolling period, in exact decimals (never floats)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Context, Decimal, Inexact, InvalidOperation, Rounded
from typing import Protocol

from hatp_journal.toolkit.wire import Money

# Sums must be exact: an amount too long to add without rounding raises instead of drifting.
EXACT = Context(prec=200, traps=[Inexact, Rounded, InvalidOperation])


def amount_of(money: Money) -> Decimal:
    """The amount as a ``Decimal`` (the wire pattern admits only plain non-negative decimals)."""
    return Decimal(money.amount)


def add(left: Decimal, right: Decimal) -> Decimal:
    """``left + right`` exactly, or ``decimal.Inexact``/``Rounded`` if that is impossible."""
    return EXACT.add(left, right)


def show(amount: Decimal) -> str:
    """A decimal as plain digits, never in exponent form (``1E-7``)."""
    return format(amount, "f")


class MoneySpent(Protocol):
    """What the policy asks of a spending ledger; the gateway's is in the store (:mod:`.stored_ledger`)."""

    def spent_in_run(self, run: str, currency: str) -> Decimal:
        """Money in ``currency`` moved by calls of ``run`` so far."""
        ...

    def spent_in_period(self, at: datetime, period: timedelta, currency: str) -> Decimal:
        """Money in ``currency`` moved after ``at - period``, across runs.

        The rolling window is ``(at - period, at]``; a spend stamped after ``at`` counts too,
        since spends are recorded as they happen: a later stamp is a call decided while this one
        waited, or by a Recorder whose clock runs ahead, and it has happened all the same.
        """
        ...


@dataclass(frozen=True)
class _Spend:
    run: str
    at: datetime
    amount: Decimal
    currency: str


class MoneyLedger:
    """An in-memory :class:`MoneySpent`, for the policy's unit tests (the gateway's is durable)."""

    def __init__(self) -> None:
        self._spends: list[_Spend] = []
        self._lock = threading.Lock()  # the gateway may record from several threads

    def record(self, run: str, at: datetime, money: Money) -> None:
        """Note that a call of ``run`` moved ``money`` at ``at`` (a timezone-aware time)."""
        if at.tzinfo is None:
            raise ValueError("record() needs a timezone-aware time; naive times make periods ambiguous")
        with self._lock:
            self._spends.append(_Spend(run, at, amount_of(money), money.currency))

    def spent_in_run(self, run: str, currency: str) -> Decimal:
        """Money in ``currency`` moved by calls of ``run`` so far."""
        return self._sum(lambda spend: spend.run == run, currency)

    def spent_in_period(self, at: datetime, period: timedelta, currency: str) -> Decimal:
        """Money in ``currency`` moved after ``at - period``, across runs (see :class:`MoneySpent`)."""
        start = at - period
        return self._sum(lambda spend: start < spend.at, currency)

    def _sum(self, keep: Callable[[_Spend], bool], currency: str) -> Decimal:
        total = Decimal(0)
        with self._lock:
            for spend in self._spends:
                if spend.currency == currency and keep(spend):
                    total = add(total, spend.amount)
        return total
