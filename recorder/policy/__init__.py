"""hatp_journal.recorder.policy: autonomy granted by reversibility (protocol.md §7).

Load the organisation's policy with :func:`load_policy`, describe each call with
:class:`CallFacts` and ask :func:`decide` whether to forward it (``allow``) or hold it for an
approver (``ask``). Everything the policy does not explicitly allow is an ask. Every decision
carries the call's reversibility class R0–R4 (:func:`classify_call`), with the rule that gave it. With
``requireVerified``, the conformance attestations the policy names decide which undoable
operations are verified (:mod:`.attestations`).
"""

from hatp_journal.recorder.file_places.problems import Problem
from hatp_journal.recorder.policy.attestations import AttestationProblem, AttestationTrust
from hatp_journal.recorder.policy.classes import ClassVerdict, Hints, RClass, classify
from hatp_journal.recorder.policy.classify import classify_call
from hatp_journal.recorder.policy.decide import Decision, decide, policy_rules
from hatp_journal.recorder.policy.errors import PolicyFileError
from hatp_journal.recorder.policy.facts import CallFacts, Kind
from hatp_journal.recorder.policy.load import load_policy, parse_policy
from hatp_journal.recorder.policy.model import (
    Action,
    Autonomy,
    MoneyCaps,
    PeriodCap,
    Policy,
    PolicyOverride,
    ViaRules,
)
from hatp_journal.recorder.policy.money import MoneyLedger, MoneySpent
from hatp_journal.recorder.policy.reasons import Reason, ReasonCode, Verdict
from hatp_journal.recorder.policy.rules import AllOf, Rule, UnsafeNoOp

__all__ = [
    "Action",
    "AllOf",
    "AttestationProblem",
    "AttestationTrust",
    "Autonomy",
    "CallFacts",
    "ClassVerdict",
    "Decision",
    "Hints",
    "Kind",
    "MoneyCaps",
    "MoneyLedger",
    "MoneySpent",
    "PeriodCap",
    "Policy",
    "PolicyFileError",
    "PolicyOverride",
    "Problem",
    "RClass",
    "Reason",
    "ReasonCode",
    "Rule",
    "UnsafeNoOp",
    "Verdict",
    "ViaRules",
    "classify",
    "classify_call",
    "decide",
    "load_policy",
    "parse_policy",
    "policy_rules",
]
