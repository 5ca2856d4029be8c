"""Money caps (protocol.md §7): reversible is not the same as bounded.

A call that would take its run, or the rolling period, past a cap becomes an ask, with the
totals shown. Caps compare exact decimals in the cap's own currency; nothing is converted.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, DecimalException

from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.model import MoneyCaps
from hatp_journal.recorder.policy.money import MoneySpent, add, amount_of, show
from hatp_journal.recorder.policy.reasons import Reason, ReasonCode, Totals, Verdict, reason
from hatp_journal.toolkit.wire import Money


@dataclass(frozen=True)
class MoneyCapsRule:
    """Asks when a charging call would pass the per-run or the rolling per-period cap."""

    caps: MoneyCaps

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Totals are returned for every charging call, so the journal shows them even when allowed."""
        if (self.caps.per_run is None and self.caps.per_period is None) or not (
            facts.charges or facts.amount is not None
        ):
            return Verdict.allow()
        if facts.amount is None:
            return Verdict.ask(reason(ReasonCode.UNCLASSIFIED, "the call moves money but states no amount"))
        try:
            return self._judge(facts, facts.amount, spent)
        except DecimalException:
            # Amounts too long to add exactly: refuse to guess.
            return Verdict.ask(reason(ReasonCode.UNCLASSIFIED, "the amounts cannot be added exactly"))

    def _judge(self, facts: CallFacts, amount: Money, spent: MoneySpent) -> Verdict:
        reasons: list[Reason] = []
        totals: Totals = {}
        call = amount_of(amount)
        if (cap := self.caps.per_run) is not None:
            if facts.run is None:
                no_run = "a per-run cap applies but the call names no run"
                reasons.append(reason(ReasonCode.UNCLASSIFIED, no_run))
            else:
                so_far = spent.spent_in_run(facts.run, cap.currency)
                where = {"run": facts.run}
                found = _check(cap, amount, call, so_far, where, ReasonCode.MONEY_PER_RUN, "the run")
                reasons += found[0]
                totals["perRun"] = found[1]
        if (period_cap := self.caps.per_period) is not None:
            since = facts.at - period_cap.window
            so_far = spent.spent_in_period(facts.at, period_cap.window, period_cap.currency)
            where = {"period": period_cap.period, "since": wire_time(since)}
            found = _check(period_cap, amount, call, so_far, where, ReasonCode.MONEY_PER_PERIOD, "the period")
            reasons += found[0]
            totals["perPeriod"] = found[1]
        return Verdict("ask" if reasons else "allow", tuple(reasons), totals or None)


def _check(
    cap: Money,
    amount: Money,
    call: Decimal,
    so_far: Decimal,
    where: dict[str, str],
    code: ReasonCode,
    scope: str,
) -> tuple[list[Reason], dict[str, str]]:
    """The reasons to ask under one cap, and that cap's totals."""
    limit = amount_of(cap)
    if amount.currency != cap.currency:
        totals = {"spent": show(so_far), "call": show(call), "callCurrency": amount.currency}
        totals |= {"cap": show(limit), "currency": cap.currency, **where}
        mismatch = f"the call moves {amount.currency} but the cap is in {cap.currency}; nothing is converted"
        return [reason(ReasonCode.UNCLASSIFIED, mismatch, **totals)], totals
    total = add(so_far, call)
    totals = {
        "spent": show(so_far),
        "call": show(call),
        "total": show(total),
        "cap": show(limit),
        "currency": cap.currency,
        **where,
    }
    if total <= limit:
        return [], totals
    detail = f"this call ({show(call)} {cap.currency}) would take {scope} to {show(total)}, over its cap"
    return [reason(code, detail, **totals)], totals
