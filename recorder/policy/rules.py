"""Decision rules as small objects, composed sigstore-style: ``AllOf`` asks when any rule asks,
and asks when it has no rules at all. The rule that lets everything through is named ``UnsafeNoOp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.policy.attestations import AttestationProblem, Attestations, Judgement
from hatp_journal.recorder.policy.classes import CLASSES, ClassSource
from hatp_journal.recorder.policy.facts import KINDS, VIAS, CallFacts
from hatp_journal.recorder.policy.model import Action, Autonomy, ClassActions, MoneyCaps, PolicyOverride
from hatp_journal.recorder.policy.money import MoneySpent
from hatp_journal.recorder.policy.reasons import Reason, ReasonCode, Totals, Verdict, reason
from hatp_journal.toolkit.wire import Money

NOT_ATTESTED = AttestationProblem.NOT_ATTESTED


class Rule(Protocol):
    """Anything that can judge a call. Rules never raise on odd facts: they ask."""

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Allow or ask for ``facts``, given the money ``spent`` so far."""
        ...


@dataclass(frozen=True)
class AllOf:
    """Allows only when every rule allows. Empty, it asks: a policy with no rules grants nothing."""

    rules: Sequence[Rule]

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Every rule is evaluated, so the approver sees all the reasons, not only the first."""
        if not self.rules:
            return Verdict.ask(reason(ReasonCode.UNCLASSIFIED, "no rules to decide by; an empty AllOf asks"))
        verdicts = [rule.evaluate(facts, spent) for rule in self.rules]
        totals: Totals = {}
        for verdict in verdicts:
            totals.update(verdict.totals or {})
        return Verdict(
            "allow" if all(verdict.action == "allow" for verdict in verdicts) else "ask",
            tuple(found for verdict in verdicts for found in verdict.reasons),
            totals or None,
        )


@dataclass(frozen=True)
class UnsafeNoOp:
    """Allows every call. Unsafe by name: for tests only, never in a Recorder."""

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Allow, whatever the call."""
        return Verdict.allow()


@dataclass(frozen=True)
class Classified:
    """Asks ``UNCLASSIFIED`` for facts it cannot read; only well-formed facts reach ``then``."""

    then: Rule

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Check the facts' shape first, since the inner rules compare times and amounts."""
        problems = _problems(facts)
        if problems:
            return Verdict.ask(*(reason(ReasonCode.UNCLASSIFIED, problem) for problem in problems))
        return self.then.evaluate(facts, spent)


def _problems(facts: CallFacts) -> list[str]:
    # The gateway is typed, but a bug there must turn into an ask, not into an allow or a crash.
    problems = [
        f"{name} is not a non-empty string"
        for name in ("server", "tool")
        if not isinstance(getattr(facts, name), str) or not getattr(facts, name)
    ]
    if facts.run is not None and (not isinstance(facts.run, str) or not facts.run):
        problems.append("run is not a non-empty string")
    if facts.kind not in KINDS:
        problems.append(f"kind {facts.kind!r} is none of {sorted(KINDS)}")
    if facts.via is not None and facts.via not in VIAS:
        problems.append(f"via {facts.via!r} is none of {sorted(VIAS)}")
    if facts.kind == "compensate" and facts.via is None:
        problems.append("a compensate call must say how it is undone (via)")
    window = facts.window_seconds
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 0):
        problems.append(f"window_seconds {window!r} is not a non-negative integer")
    if not isinstance(facts.at, datetime) or facts.at.tzinfo is None:
        problems.append("the call time is not a timezone-aware datetime")
    if facts.amount is not None and not isinstance(facts.amount, Money):
        problems.append("amount is not Money")
    if facts.reversibility is not None and facts.reversibility.rclass not in CLASSES:
        problems.append(f"class {facts.reversibility.rclass!r} is none of {list(CLASSES)}")
    keys = facts.server_keys
    if not isinstance(keys, frozenset) or not all(isinstance(kid, str) for kid in keys):
        problems.append("server_keys is not a set of key ids")
    return problems


@dataclass(frozen=True)
class KindRule:
    """The policy's action for the call's kind of undo (``compensate``, ``none``, ``unknown``, ``read``)."""

    autonomy: Autonomy

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Allow only what the policy explicitly allows."""
        action = getattr(self.autonomy, facts.kind, "ask") if facts.kind in KINDS else "ask"
        if action == "allow":
            return Verdict.allow()
        if facts.kind == "none":
            return Verdict.ask(reason(ReasonCode.IRREVERSIBLE, "the operation cannot be undone"))
        if facts.kind == "unknown":
            return Verdict.ask(reason(ReasonCode.UNKNOWN_UNDO, "the operation declares no undo"))
        asks = f"the policy asks for {facts.kind} calls"
        return Verdict.ask(reason(ReasonCode.KIND_ASKS, asks, kind=facts.kind))


@dataclass(frozen=True)
class UiRule:
    """``via: ui`` undo replays through an app's screens (protocol.md §6): ask unless the policy allows it."""

    ui: Action

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Ask for UI-replayed undo unless ``via.ui`` is ``allow``."""
        if facts.via == "ui" and self.ui != "allow":
            return Verdict.ask(reason(ReasonCode.UI_UNDO, "the undo would replay through a user interface"))
        return Verdict.allow()


@dataclass(frozen=True)
class MinimumWindow:
    """A ``compensate`` call whose undo window is shorter than the minimum is an ask."""

    minimum_seconds: int

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Ask when the window is below the minimum, or unknown while a minimum applies."""
        window = facts.window_seconds
        if facts.kind != "compensate" or self.minimum_seconds == 0 or (window or 0) >= self.minimum_seconds:
            return Verdict.allow()
        said = "not declared" if window is None else f"{window} s"
        return Verdict.ask(
            reason(
                ReasonCode.WINDOW_TOO_SHORT,
                f"the undo window ({said}) is shorter than the minimum of {self.minimum_seconds} s",
                windowSeconds=window,
                minWindowSeconds=self.minimum_seconds,
            )
        )


@dataclass(frozen=True)
class RequireVerified:
    """With ``requireVerified``, a ``compensate`` call stays on ask until its undo is verified
    (protocol.md §13): by the facts, or by a genuine, fresh attestation for the server's key
    (``attestations``)."""

    required: bool
    attestations: Attestations | None = None

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Ask for unverified compensations when verification is required, saying why."""
        if not self.required or facts.kind != "compensate" or facts.verified is True:
            return Verdict.allow()
        judged = self.attestations.judge(facts) if self.attestations else Judgement(False, NOT_ATTESTED)
        if judged.verified:
            said = f"verified by the conformance attestation {judged.source}"
            return Verdict.allow(
                reason(ReasonCode.VERIFIED, said, source=judged.source, digest=judged.digest)
            )
        problem = (judged.problem or NOT_ATTESTED).value
        return Verdict.ask(
            reason(
                ReasonCode.NOT_VERIFIED,
                f"the undo is declared but not verified ({problem})",
                attestation=problem,
                source=judged.source,
            )
        )


@dataclass(frozen=True)
class Overridable:
    """The latest override for the call's server and tool in force at the call's time decides;
    without one, ``rule`` does. An override never reaches back before its ``from`` time.
    """

    rule: Rule
    overrides: Sequence[PolicyOverride]

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Apply the override in force, if any."""
        in_force = [
            (override.from_, index, override)
            for index, override in enumerate(self.overrides)
            if override.server == facts.server and override.tool == facts.tool and override.from_ <= facts.at
        ]
        if not in_force:
            return self.rule.evaluate(facts, spent)
        # Latest start wins; between equal starts, the one written later in the file.
        override = max(in_force, key=lambda found: found[:2])[2]
        why = reason(
            ReasonCode.OVERRIDE,
            f"override by {override.by}: {override.reason}",
            action=override.action,
            by=override.by,
            reason=override.reason,
            **{"from": wire_time(override.from_)},
        )
        return Verdict(override.action, (why,))


@dataclass(frozen=True)
class ClassRule:
    """A class policy's action for the call's reversibility class (``autonomy.classes``).

    ``allow`` and ``allow-notify`` allow (the latter flagged ``NOTIFY``); ``ask-or-budget`` allows
    a call that charges under a money cap (the caps then bound it) and asks otherwise; ``ask`` asks;
    ``never-autonomous`` is left to :class:`NeverAutonomous`. No class (facts not classified) asks.
    """

    classes: ClassActions
    money: MoneyCaps

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Allow only what the class policy allows."""
        found = facts.reversibility
        if found is None:
            return Verdict.ask(reason(ReasonCode.UNCLASSIFIED, "the call has no reversibility class"))
        action = self.classes.of(found.rclass)
        data = {"class": found.rclass, "rule": found.rule}
        if action == "allow":
            return Verdict.allow()
        if action == "allow-notify":
            return Verdict.allow(
                reason(ReasonCode.NOTIFY, f"{found.rclass} calls are allowed and reported", **data)
            )
        budget = self.money.per_run is not None or self.money.per_period is not None
        if action == "ask-or-budget" and facts.charges and budget:
            said = f"{found.rclass} calls are allowed within the money caps"
            return Verdict.allow(reason(ReasonCode.WITHIN_BUDGET, said, **data))
        if action == "never-autonomous":
            return Verdict.allow()  # NeverAutonomous asks, beyond any override's reach; said once
        return Verdict.ask(reason(ReasonCode.CLASS_ASKS, f"the policy asks for {found.rclass} calls", **data))


@dataclass(frozen=True)
class NeverAutonomous:
    """Outside the overrides' reach: a call whose class is ``never-autonomous`` asks, even when an
    override allows the tool (it could otherwise lift a disclosure no class override may lower)."""

    classes: ClassActions

    def evaluate(self, facts: CallFacts, spent: MoneySpent) -> Verdict:
        """Ask for never-autonomous classes."""
        found = facts.reversibility
        if found is None or self.classes.of(found.rclass) != "never-autonomous":
            return Verdict.allow()
        said = f"{found.rclass} calls are never autonomous"
        return Verdict.ask(
            reason(ReasonCode.NEVER_AUTONOMOUS, said, **{"class": found.rclass, "rule": found.rule})
        )


def lowered_notice(facts: CallFacts) -> tuple[Reason, ...]:
    """``NOTIFY`` for a call allowed at a class an override lowered, naming the person who lowered
    it (a lowering is a person's decision, docs/policy.md); nothing for any other call."""
    found = facts.reversibility
    base = found.evidence.get("baseClass") if found is not None else None
    if found is None or found.rule != ClassSource.OVERRIDE or base not in CLASSES:
        return ()
    if CLASSES.index(found.rclass) >= CLASSES.index(str(base)):
        return ()
    by = found.evidence.get("by")
    said = f"{found.rclass} only because {by} lowered it from {base}: {found.evidence.get('reason')}"
    data = {"class": found.rclass, "rule": found.rule, "by": by, "from": base}
    return (reason(ReasonCode.NOTIFY, said, **data),)
