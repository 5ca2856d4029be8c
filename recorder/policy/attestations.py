"""Conformance attestations, as ``requireVerified`` reads them (protocol.md §7, §13).

The policy names attestation files and pins the conformance signer's public key::

    "attestations": {"signer": {"kid": "ed25519-…", "publicKey": "…"},
                     "files": ["crm.attestation.json"], "maxAgeSeconds": 2592000}

An operation counts as verified for a call only if a genuine attestation (signed by that signer)
lists the tool with the call's kind of undo and the digest of the declaration the Recorder read
for it now, names a receipt key the Recorder holds for the call's server, and was issued no
longer than ``maxAgeSeconds`` before the call. Anything else
keeps the call on ``ask``, with a stable code saying why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

from pydantic import Field, ValidationError

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import parse_wire_time
from hatp_journal._shared.durations import MAX_WINDOW_SECONDS
from hatp_journal._shared.files import FileProblem, check_nesting, read_text
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.toolkit.attestation import Attestation, verify_attestation
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import PublicKey, WireModel

DEFAULT_MAX_AGE_SECONDS = 30 * 24 * 3600
CLOCK_SKEW = timedelta(minutes=5)
"""An attestation issued this little after a call still counts (the two clocks differ)."""


class AttestationTrust(WireModel):
    """The policy's ``autonomy.attestations``: which files, whose signature, how old at most."""

    signer: PublicKey = Field(description="The conformance signer's public key, pinned here")
    files: tuple[str, ...] = Field(min_length=1, description="Attestation files, relative to the policy file")
    max_age_seconds: int = Field(default=DEFAULT_MAX_AGE_SECONDS, gt=0, le=MAX_WINDOW_SECONDS)


class AttestationProblem(StrEnum):
    """Why no attestation verifies an operation; journaled with the ``NOT_VERIFIED`` reason."""

    NOT_ATTESTED = "NOT_ATTESTED"
    """No attestation lists the tool."""
    FORGED = "FORGED"
    """An attestation lists it, but its signature does not verify with the pinned signer."""
    OTHER_SERVER_KEY = "OTHER_SERVER_KEY"
    """A genuine attestation lists it for a server key the Recorder does not hold for this server."""
    OTHER_KIND = "OTHER_KIND"
    """A genuine attestation lists it with another kind of undo than the tool declares now."""
    OTHER_DECLARATION = "OTHER_DECLARATION"
    """A genuine attestation lists it with its kind of undo, but for another declaration than the
    tool publishes now (e.g. a shorter window or new side effects), or for none at all."""
    STALE = "STALE"
    """The only genuine, matching attestation is older than ``maxAgeSeconds``."""
    NOT_YET_VALID = "NOT_YET_VALID"
    """The only genuine, matching attestation was issued after the call."""


class AttestationFileError(ValueError):
    """An attestation file the policy names can't be read as an attestation; ``index`` is its place."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class LoadedAttestation:
    """One attestation file: what it claims, and whether the pinned signer signed it."""

    source: str
    attestation: Attestation
    genuine: bool
    digest: str
    issued_at: datetime


@dataclass(frozen=True)
class Judgement:
    """Whether a call's operation is verified, which attestation says so, or why not."""

    verified: bool
    problem: AttestationProblem | None = None
    source: str | None = None
    digest: str | None = None


class Attestations:
    """The attestations a policy trusts, read once when the policy is loaded."""

    def __init__(self, trust: AttestationTrust, loaded: list[LoadedAttestation]) -> None:
        self.max_age = timedelta(seconds=trust.max_age_seconds)
        self.loaded = loaded

    @classmethod
    def load(cls, trust: AttestationTrust, base: Path) -> Attestations:
        """Read every file (relative to ``base``); an unreadable one raises :class:`AttestationFileError`."""
        try:
            signer = VerifyKey.from_wire(trust.signer)
        except (KeyFileError, ValueError) as error:
            raise AttestationFileError(-1, f"the signer key is not an Ed25519 public key: {error}") from None
        loaded = []
        for index, name in enumerate(trust.files):
            path = base / name
            try:
                text = read_text(path)
                check_nesting(text, path, syntax="json")  # json.loads recurses once per level
                raw = json.loads(text)
                attestation = Attestation.model_validate(raw)
                issued_at = parse_wire_time(attestation.issued_at)
            except FileProblem as problem:  # missing, a folder, empty, too large, not UTF-8, too deep
                raise AttestationFileError(index, str(problem)) from None
            except (ValueError, ValidationError) as error:
                raise AttestationFileError(
                    index, f"{path} is not a conformance attestation: {error}"
                ) from None
            genuine = isinstance(raw, dict) and verify_attestation(raw, signer)
            loaded.append(LoadedAttestation(str(path), attestation, genuine, sha256_digest(raw), issued_at))
        return cls(trust, loaded)

    def judge(self, facts: CallFacts) -> Judgement:
        """The verdict for one call: verified by a fresh, genuine, matching attestation, or why not."""
        problems: list[tuple[AttestationProblem, LoadedAttestation]] = []
        for loaded in self.loaded:
            problem = self._problem(loaded, facts)
            if problem is None:
                return Judgement(True, source=loaded.source, digest=loaded.digest)
            if problem is not AttestationProblem.NOT_ATTESTED:
                problems.append((problem, loaded))
        if not problems:
            return Judgement(False, AttestationProblem.NOT_ATTESTED)
        # Report the attestation that came closest: stale beats another key beats forged.
        problem, closest = min(problems, key=lambda found: _CLOSENESS.index(found[0]))
        return Judgement(False, problem, closest.source, closest.digest)

    def _problem(self, loaded: LoadedAttestation, facts: CallFacts) -> AttestationProblem | None:
        listed = [operation for operation in loaded.attestation.operations if operation.tool == facts.tool]
        if not listed:
            return AttestationProblem.NOT_ATTESTED
        if not loaded.genuine:
            return AttestationProblem.FORGED
        if not {key.kid for key in loaded.attestation.server.keys} & facts.server_keys:
            return AttestationProblem.OTHER_SERVER_KEY
        same_kind = [operation for operation in listed if operation.kind == facts.kind]
        if not same_kind:
            return AttestationProblem.OTHER_KIND
        digests = {operation.declaration_digest for operation in same_kind} - {None}
        if facts.declaration_digest not in digests:
            return AttestationProblem.OTHER_DECLARATION
        if loaded.issued_at > facts.at + CLOCK_SKEW:
            return AttestationProblem.NOT_YET_VALID
        if facts.at - loaded.issued_at > self.max_age:
            return AttestationProblem.STALE
        return None


_CLOSENESS = [
    AttestationProblem.STALE,
    AttestationProblem.NOT_YET_VALID,
    AttestationProblem.OTHER_DECLARATION,
    AttestationProblem.OTHER_KIND,
    AttestationProblem.OTHER_SERVER_KEY,
    AttestationProblem.FORGED,
]
