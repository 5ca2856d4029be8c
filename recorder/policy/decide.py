"""One decision per call: the policy's rules, composed so that every doubt becomes an ask."""

from __future__ import annotations

from dataclasses import replace

from hatp_journal.recorder.policy.caps import MoneyCapsRule
from hatp_journal.recorder.policy.classes import ClassVerdict
from hatp_journal.recorder.policy.classify import classify_call
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.model import Action, Policy
from hatp_journal.recorder.policy.money import MoneySpent
from hatp_journal.recorder.policy.reasons import Reason, Totals
from hatp_journal.recorder.policy.rules import (
    AllOf,
    Classified,
    ClassRule,
    KindRule,
    MinimumWindow,
    NeverAutonomous,
    Overridable,
    RequireVerified,
    Rule,
    UiRule,
    lowered_notice,
)
from hatp_journal.toolkit.wire import WireModel


class Decision(WireModel):
    """The policy's answer for one call, journaled with the digest of the policy that gave it."""

    action: Action
    reasons: tuple[Reason, ...] = ()
    totals: Totals | None = None
    policy_digest: str
    reversibility: ClassVerdict | None = None


def policy_rules(policy: Policy) -> Rule:
    """The policy as one rule.

    Overrides replace the per-operation rules (kind, ``via``, window, verification) but never the
    money caps, which bound the agent's spending whatever the operation; facts that cannot be read
    ask before any rule, override included, sees them. A policy that speaks classes
    (``autonomy.classes``) judges the call's class where the kind rule would, and no override
    lifts a never-autonomous class.
    """
    autonomy = policy.autonomy
    classes = autonomy.classes
    operation = AllOf(
        [
            KindRule(autonomy) if classes is None else ClassRule(classes, autonomy.money),
            UiRule(autonomy.via.ui),
            MinimumWindow(autonomy.min_window_seconds),
            RequireVerified(autonomy.require_verified, policy.attested()),
        ]
    )
    rules: list[Rule] = [Overridable(operation, policy.overrides), MoneyCapsRule(autonomy.money)]
    if classes is not None:
        rules.append(NeverAutonomous(classes))
    return Classified(AllOf(rules))


_last_rules: tuple[Policy, Rule] | None = None
"""The rules of the policy decided last: a policy is frozen, so its rules never change (and the
Recorder decides every call with the same one)."""


def _rules_of(policy: Policy) -> Rule:
    global _last_rules
    last = _last_rules
    if last is not None and last[0] is policy:
        return last[1]
    rules = policy_rules(policy)
    _last_rules = (policy, rules)
    return rules


def decide(policy: Policy, facts: CallFacts, spent: MoneySpent) -> Decision:
    """Allow or ask for one call, with the reasons, the money totals, the policy's digest and the
    call's reversibility class (with the rule that gave it), which the Run Record keeps."""
    if facts.reversibility is None:
        facts = replace(facts, reversibility=classify_call(policy, facts))
    verdict = _rules_of(policy).evaluate(facts, spent)
    # A call let through at a class a person lowered is at least reported.
    lowered = lowered_notice(facts) if verdict.action == "allow" else ()
    return Decision(
        action=verdict.action,
        reasons=verdict.reasons + lowered,
        totals=verdict.totals,
        policy_digest=policy.digest(),
        reversibility=facts.reversibility,
    )


def same_for_every_call(policy: Policy, facts: CallFacts) -> bool:
    """Whether :func:`decide` gives every call of ``facts``' tool one decision, whatever its time,
    run and arguments, so that the gateway may decide a tool's calls once.

    True when the call states no amount (nothing is spent or held), its class is known already
    (worked out once at connect) and neither an override naming the tool nor attestations (the
    only rules that read the time) apply.
    """
    return (
        facts.amount is None
        and facts.reversibility is not None
        and policy.autonomy.attestations is None
        and not any(o.server == facts.server and o.tool == facts.tool for o in policy.overrides)
    )
