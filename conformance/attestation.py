"""Signed attestations: "these operations of this server (this key), declared exactly so, passed this
suite, at this time".

The Recorder's ``requireVerified`` policy accepts an attestation signed by the conformance signer
it pinned, for exactly the operations listed, while they declare what the suite read (the digest
of each declaration), for the server key named, while it is fresh enough
(``hatp_journal.recorder.policy.attestations``). The receipt is an Ed25519 signature over the
RFC 8785 form of ``{"alg", "kid", "issuedAt", "payload": {"attestation": <without receipt>}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import Field

from hatp_journal.conformance.results import SuiteInfo, SuiteResult
from hatp_journal.toolkit.canonical import sha256_digest
from hatp_journal.toolkit.clock import wire_time
from hatp_journal.toolkit.signing import RECEIPT_FIELDS, SigningKey, VerifyKey, verify
from hatp_journal.toolkit.wire import PublicKey, Receipt, WireModel

ATTESTATION_TYPE: Final = "hatp-journal/conformance-attestation/1"


class AttestedOperation(WireModel):
    """An operation that passed every check that applies to it, and which requirements those were."""

    tool: str = Field(min_length=1)
    kind: Literal["compensate", "none"]
    requirements: list[str]
    declaration_digest: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="sha256 of the RFC 8785 form of the declaration the suite read in tools/list; "
        "a Recorder counts the attestation only while the tool declares exactly this (one without "
        "it, from an older suite, verifies nothing)",
    )


class AttestedServer(WireModel):
    """The server the suite ran against: its URI and the keys its receipts verified with."""

    uri: str = Field(min_length=1)
    keys: list[PublicKey] = Field(min_length=1)


class Attestation(WireModel):
    """A conformance attestation (protocol.md §7, §13)."""

    type: Literal["hatp-journal/conformance-attestation/1"] = ATTESTATION_TYPE
    suite: SuiteInfo
    target: str
    server: AttestedServer
    operations: list[AttestedOperation]
    result_digest: str = Field(description="sha256 of the RFC 8785 form of the suite's JSON result")
    issued_at: str
    receipt: Receipt | None = None


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


def attestation_payload(attestation: Mapping[str, Any]) -> dict[str, Any]:
    """What an attestation's receipt signs: the attestation without its receipt."""
    return {"attestation": {k: v for k, v in attestation.items() if k != "receipt"}}


def verify_attestation(attestation: Mapping[str, Any], signer: VerifyKey) -> bool:
    """Whether ``attestation`` (as read from its file, camelCase) is signed by ``signer``."""
    raw = attestation.get("receipt")
    if not isinstance(raw, Mapping) or set(raw) != RECEIPT_FIELDS:
        return False
    try:
        receipt = Receipt.model_validate(dict(raw))
    except ValueError:
        return False
    return verify(receipt, attestation_payload(attestation), {signer.kid: signer})
