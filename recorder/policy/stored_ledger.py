"""The money ledger in the Recorder's store, shared by every Recorder process on that store.

A charging call's decision and the hold on its amount are one transaction: it first takes the
single row of ``rec_money_turn`` (a write, so on SQLite the database's write lock, and a row lock
elsewhere), then reads the spends, decides and, if the call is allowed, holds its amount. Two
Recorders racing for the last room under a cap therefore take turns, and the second sees the
first's hold: at most one passes. A hold counts at once; the gateway marks it spent when the call
went through and deletes it when the call failed, so a failed call does not count. A hold whose
outcome never came (the Recorder died mid-call) stays and keeps counting: the ledger errs towards
asking, never towards spending more than the cap.

Amounts are stored as the decimal strings they came as and summed as exact decimals, never as
floats (the database never adds them). Times are stored as fixed-width UTC text with
microseconds, so comparing the strings compares the times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import Connection, Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from hatp_journal.recorder.policy.decide import Decision, decide
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.model import Policy
from hatp_journal.recorder.policy.money import add
from hatp_journal.toolkit.store_schema import ensure_schema
from hatp_journal.toolkit.wire import Money


class RecSpend(SQLModel, table=True):
    """Money one call of a run moved, or is moving (``held``, until its outcome is known)."""

    __tablename__ = "rec_spend"

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(index=True)
    at: str = Field(index=True)  # see stamp()
    amount: str  # the exact decimal string; never a float column
    currency: str
    state: str


class RecMoneyTurn(SQLModel, table=True):
    """One row that every check-and-hold writes first, so that they take turns."""

    __tablename__ = "rec_money_turn"

    id: int = Field(primary_key=True)
    turns: int = 0


_SPEND = SQLModel.metadata.tables["rec_spend"]
_TURN = SQLModel.metadata.tables["rec_money_turn"]
TABLES = [_SPEND, _TURN]
LEDGER_SCHEMA = 1
"""The version of the ledger's tables (``hatp_schema`` part ``ledger``)."""


def stamp(at: datetime) -> str:
    """``at`` as fixed-width UTC text with microseconds (``2026-11-03T12:00:00.000000Z``)."""
    if at.tzinfo is None:
        raise ValueError("the ledger needs timezone-aware times; naive times make periods ambiguous")
    return at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


@dataclass(frozen=True)
class Hold:
    """Money set aside for one call while it is forwarded."""

    id: int
    run: str
    money: Money


class StoredLedger:
    """A :class:`~.money.MoneySpent` in the Recorder's store; see the module's docstring."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        ensure_schema(engine, "ledger", LEDGER_SCHEMA, TABLES)
        try:
            with engine.begin() as connection:
                if connection.execute(select(_TURN.c.id)).first() is None:
                    connection.execute(insert(_TURN), {"id": 1, "turns": 0})
        except IntegrityError:
            pass  # another Recorder made the row first

    def spent_in_run(self, run: str, currency: str) -> Decimal:
        """Money in ``currency`` moved (or held) by calls of ``run`` so far."""
        with self.engine.connect() as connection:
            return _Spends(connection).spent_in_run(run, currency)

    def spent_in_period(self, at: datetime, period: timedelta, currency: str) -> Decimal:
        """Money in ``currency`` moved (or held) after ``at - period``, across runs and processes."""
        with self.engine.connect() as connection:
            return _Spends(connection).spent_in_period(at, period, currency)

    def decide(self, policy: Policy, facts: CallFacts) -> tuple[Decision, Hold | None]:
        """Decide the call and, if it is allowed and states an amount, hold that amount, atomically."""
        if facts.amount is None:
            return decide(policy, facts, self), None
        if facts.run is None:
            raise ValueError("a call that moves money needs its run, to hold the amount under")
        with self.engine.begin() as connection:
            connection.execute(update(_TURN).values(turns=_TURN.c.turns + 1))
            decision = decide(policy, facts, _Spends(connection))
            if decision.action != "allow":
                return decision, None
            return decision, _hold(connection, facts.run, facts.at, facts.amount)

    def hold(self, facts: CallFacts) -> Hold | None:
        """Hold the call's amount without deciding (a person approved it); ``None`` if it states none."""
        if facts.amount is None:
            return None
        if facts.run is None:
            raise ValueError("a call that moves money needs its run, to hold the amount under")
        with self.engine.begin() as connection:
            return _hold(connection, facts.run, facts.at, facts.amount)

    def settle(self, held: Hold | None, *, moved: bool) -> None:
        """The call's outcome: its hold becomes spent if it ``moved`` money, else it is released."""
        if held is None:
            return
        unsettled = (_SPEND.c.id == held.id) & (_SPEND.c.state == "held")
        with self.engine.begin() as connection:
            if moved:
                connection.execute(update(_SPEND).where(unsettled).values(state="spent"))
            else:
                connection.execute(delete(_SPEND).where(unsettled))

    def spends(self) -> list[tuple[str, str, str]]:
        """Every spend as (run, amount, state), oldest first: what an operator checks after a crash."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(_SPEND.c.run, _SPEND.c.amount, _SPEND.c.state).order_by(_SPEND.c.id)
            ).all()
        return [(row.run, row.amount, row.state) for row in rows]


class _Spends:
    """The spends as one connection (and its transaction) sees them."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def spent_in_run(self, run: str, currency: str) -> Decimal:
        query = select(_SPEND.c.amount).where(_SPEND.c.run == run, _SPEND.c.currency == currency)
        return _total(self.connection.execute(query).scalars())

    def spent_in_period(self, at: datetime, period: timedelta, currency: str) -> Decimal:
        since = stamp(at - period)
        query = select(_SPEND.c.amount).where(_SPEND.c.currency == currency, _SPEND.c.at > since)
        return _total(self.connection.execute(query).scalars())


def _hold(connection: Connection, run: str, at: datetime, money: Money) -> Hold:
    row = {"run": run, "at": stamp(at), "amount": money.amount, "currency": money.currency, "state": "held"}
    key = connection.execute(insert(_SPEND), row).inserted_primary_key
    assert key is not None
    return Hold(id=key[0], run=run, money=money)


def _total(amounts: Iterable[str]) -> Decimal:
    total = Decimal(0)
    for amount in amounts:
        total = add(total, Decimal(amount))
    return total
