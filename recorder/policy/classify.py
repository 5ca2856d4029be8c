"""The class of one call under a policy: its sources (:mod:`.classes`), then the deployment's
class overrides, which move a class up or down but never lower a disclosure."""

from __future__ import annotations

from hatp_journal.recorder.policy.classes import (
    ClassSource,
    ClassVerdict,
    ServerTrust,
    classify,
    rank,
    verdict,
)
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.model import ClassOverride, Policy


def classify_call(policy: Policy, facts: CallFacts) -> ClassVerdict:
    """The class, the rule that gave it and the evidence, for ``facts`` under ``policy``."""
    record = policy.host_registry().record_for(facts.server)
    registered = record.judge(facts.tool, facts.arguments) if record is not None else None
    trust = ServerTrust(trusted=facts.trusted, keyed=bool(facts.server_keys))
    base = classify(facts.declared_class, registered, facts.hints, trust)
    found = [
        override
        for override in policy.class_overrides
        if (override.server, override.tool) == (facts.server, facts.tool)
    ]
    return overridden(base, found[-1]) if found else base  # the one written last wins


def class_of_every_call(policy: Policy, facts: CallFacts) -> ClassVerdict | None:
    """The class of every call of ``facts``' tool, when no argument can change it (the registry has
    no argument rule for it), for the gateway to work out once at connect; else None (per call)."""
    record = policy.host_registry().record_for(facts.server)
    if record is not None and record.reads_arguments(facts.tool):
        return None
    return classify_call(policy, facts)


def overridden(base: ClassVerdict, override: ClassOverride) -> ClassVerdict:
    """``base`` moved by ``override``; a disclosure it would lower stays as it is, saying so."""
    evidence = {
        **base.evidence,
        "baseClass": base.rclass,
        "baseRule": base.rule,
        "by": override.by,
        "reason": override.reason,
    }
    if base.disclosure and rank(override.rclass) < rank(base.rclass):
        asked = f"{override.by} asked for {override.rclass}"
        said = f"an override cannot lower a disclosure ({asked}): {base.rationale}"
        return verdict(base.rclass, ClassSource.OVERRIDE_REFUSED, said, disclosure=True, **evidence)
    said = f"override by {override.by}: {override.reason}"
    return verdict(override.rclass, ClassSource.OVERRIDE, said, disclosure=base.disclosure, **evidence)
