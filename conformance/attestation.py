"""Signing attestations: "these operations of this server (this key), declared exactly so, passed this
suite, at this time".

The models and their verification are on the ground floor (``hatp_journal.toolkit.attestation``),
since the Recorder's ``requireVerified`` policy reads them too
(``hatp_journal.recorder.policy.attestations``); this module is the suite's signing half.
"""

from __future__ import annotations

from datetime import datetime

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import wire_time
from hatp_journal.conformance.results import SuiteResult
from hatp_journal.toolkit.attestation import (
    ATTESTATION_TYPE,
    Attestation,
    AttestedOperation,
    AttestedServer,
    attestation_payload,
    verify_attestation,
)
from hatp_journal.toolkit.signing import SigningKey

__all__ = [
    "ATTESTATION_TYPE",
    "Attestation",
    "AttestedOperation",
    "AttestedServer",
    "NothingToAttest",
    "attest",
    "attestation_payload",
    "verify_attestation",
]


class NothingToAttest(ValueError):
    """The result names no server or no key, so it can vouch for nothing."""


def attest(result: SuiteResult, key: SigningKey, now: datetime) -> Attestation:
    """Sign the operations ``result`` verified (possibly none) for its server and keys."""
    if result.server is None or not result.server_keys:
        raise NothingToAttest("the run reached no server keys; there is nothing to attest")
    passed_by: dict[str | None, list[str]] = {}
    for outcome in result.outcomes:
        if outcome.outcome == "passed":
            passed_by.setdefault(outcome.operation, []).append(outcome.requirement)
    operations = [
        AttestedOperation(
            tool=operation.tool,
            kind=operation.kind,
            requirements=sorted({*passed_by.get(None, []), *passed_by.get(operation.tool, [])}),
            declaration_digest=operation.declaration_digest,
        )
        for operation in result.operations
        if operation.verified and operation.kind in ("compensate", "none")
    ]
    issued_at = wire_time(now)
    body = Attestation(
        suite=result.suite,
        target=result.target,
        server=AttestedServer(uri=result.server, keys=result.server_keys),
        operations=operations,
        result_digest=sha256_digest(result.wire()),
        issued_at=issued_at,
    )
    receipt = key.sign(attestation_payload(body.wire()), issued_at)
    return body.model_copy(update={"receipt": receipt})
