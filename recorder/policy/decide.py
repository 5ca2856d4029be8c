"""One decision per call: the policy's rules, composed so that every doubt becomes an ask."""

from __future__ import annotations

from hatp_journal.recorder.policy.caps import MoneyCapsRule
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.model import Action, Policy
from hatp_journal.recorder.policy.money import MoneySpent
from hatp_journal.recorder.policy.reasons import Reason, Totals
from hatp_journal.recorder.policy.rules import (
    AllOf,
    Classified,
    KindRule,
    MinimumWindow,
    Overridable,
    RequireVerified,
    Rule,
    UiRule,
)
from hatp_journal.toolkit.wire import WireModel


class Decision(WireModel):
    """The policy's answer for one call, journaled with the digest of the policy that gave it."""

    action: Action
    reasons: tuple[Reason, ...] = ()
    totals: Totals | None = None
    policy_digest: str


def policy_rules(policy: Policy) -> Rule:
    """The policy as one rule.

    Overrides replace the per-operation rules (kind, ``via``, window, verification) but never the
    money caps, which bound the agent's spending whatever the operation; facts that cannot be read
    ask before any rule, override included, sees them.
    """
    autonomy = policy.autonomy
    operation = AllOf(
        [
            KindRule(autonomy),
            UiRule(autonomy.via.ui),
            MinimumWindow(autonomy.min_window_seconds),
            RequireVerified(autonomy.require_verified, policy.attested()),
        ]
    )
    return Classified(AllOf([Overridable(operation, policy.overrides), MoneyCapsRule(autonomy.money)]))


def decide(policy: Policy, facts: CallFacts, spent: MoneySpent) -> Decision:
    """Allow or ask for one call, with the reasons, the money totals and the policy's digest."""
    verdict = policy_rules(policy).evaluate(facts, spent)
    return Decision(
        action=verdict.action,
        reasons=verdict.reasons,
        totals=verdict.totals,
        policy_digest=policy.digest(),
    )
