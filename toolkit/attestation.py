"""Signed conformance attestations as data: what the suite signs and what a Recorder checks.

An attestation says "these operations of this server (this key), declared exactly so, passed this
suite, at this time". The conformance suite signs them (``hatp_journal.conformance.attestation``);
the Recorder's ``requireVerified`` policy reads and verifies them
(``hatp_journal.recorder.policy.attestations``). Both use these models, so they live on the ground
floor. The receipt is an Ed25519 signature over the RFC 8785 form of
``{"alg", "kid", "issuedAt", "payload": {"attestation": <without receipt>}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field

from hatp_journal.toolkit.signing import RECEIPT_FIELDS, VerifyKey, verify
from hatp_journal.toolkit.wire import PublicKey, Receipt, WireModel

ATTESTATION_TYPE: Final = "hatp-journal/conformance-attestation/1"


class SuiteInfo(WireModel):
    """Which suite ran: its version and the digest of its requirements manifest."""

    name: Literal["hatp-conformance"] = "hatp-conformance"
    version: str
    manifest_digest: str


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
