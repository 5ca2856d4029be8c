"""Ed25519 keys and receipts over RFC 8785 canonical JSON (protocol.md §3, §4).

A receipt signs ``{"alg", "kid", "issuedAt", "payload"}`` canonicalized with
RFC 8785, so any verifier that canonicalizes the same way reproduces the bytes.
Signatures prove who claimed what, not that the claim is true.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal._shared.files import BOM, MAX_KEY_BYTES, FileCode, FileProblem, read_bytes
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.wire import PublicKey, Receipt


def b64url(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Inverse of :func:`b64url`; raises ``ValueError`` on bad input."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(public_raw: bytes) -> str:
    """A key id derived from the public key, so a kid can't name two keys."""
    return "ed25519-" + b64url(hashlib.sha256(public_raw).digest())[:22]


@dataclass(frozen=True)
class VerifyKey:
    """A public key that checks receipts."""

    kid: str
    key: Ed25519PublicKey

    @classmethod
    def from_raw(cls, raw: bytes) -> VerifyKey:
        """Load from the raw 32 public bytes."""
        return cls(key_id(raw), Ed25519PublicKey.from_public_bytes(raw))

    @classmethod
    def from_wire(cls, published: PublicKey) -> VerifyKey:
        """Load a key published by ``hatp_journal_keys``; its kid must match its bytes."""
        key = cls.from_raw(b64url_decode(published.public_key))
        if key.kid != published.kid:
            raise KeyFileError(f"published kid {published.kid!r} does not match its key {key.kid}")
        return key

    def raw(self) -> bytes:
        """The raw 32 public bytes."""
        return self.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def wire(self) -> PublicKey:
        """The key as published on the wire."""
        return PublicKey(kid=self.kid, public_key=b64url(self.raw()))


@dataclass(frozen=True)
class SigningKey:
    """A tool server's (or Recorder's, or approver's) Ed25519 private key."""

    key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> SigningKey:
        """A fresh random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> SigningKey:
        """Load a PKCS#8 PEM private key written by :meth:`save`; errors name the file."""
        file = Path(path)
        try:
            pem = read_bytes(file, limit=MAX_KEY_BYTES).removeprefix(BOM)
        except FileProblem as problem:
            hint = "; create one with `hatp-journal keygen`" if problem.code is FileCode.MISSING else ""
            raise KeyFileError(f"{problem}{hint}") from None
        try:
            loaded = serialization.load_pem_private_key(pem, password=None)
        except ValueError as error:
            raise KeyFileError(f"{file}: not a PEM private key: {error}") from None
        if not isinstance(loaded, Ed25519PrivateKey):
            raise KeyFileError(f"{file}: holds a {type(loaded).__name__}, not an Ed25519 key")
        return cls(loaded)

    @classmethod
    def load_or_create(cls, path: str | os.PathLike[str]) -> SigningKey:
        """Load the key at ``path``, creating it (mode 0600) the first time."""
        file = Path(path)
        try:
            missing = not file.exists()
        except OSError as error:  # a name too long for the file system, a path through a file, …
            raise KeyFileError(
                f"{_shown_path(file)}: cannot use the key file: {error.strerror or error}"
            ) from None
        if missing:
            cls.generate().save(file)
        return cls.from_file(file)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the key as PKCS#8 PEM, readable by its owner only; never over an existing file.

        Raises :class:`KeyFileError` if it can't be written (it exists, its folder is a file, …).
        """
        pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as error:
            raise KeyFileError(f"{file}: cannot create the key file: {error.strerror or error}") from None
        with os.fdopen(fd, "wb") as out:
            out.write(pem)

    @property
    def public(self) -> VerifyKey:
        """The matching public key."""
        raw = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return VerifyKey.from_raw(raw)

    @property
    def kid(self) -> str:
        """The key id of the public key."""
        return self.public.kid

    def sign(self, payload: Any, issued_at: str) -> Receipt:
        """Sign ``payload`` (any JSON value) and return the receipt."""
        kid = self.kid
        signature = self.key.sign(_signed_bytes(payload, kid, issued_at))
        return Receipt(kid=kid, sig=b64url(signature), issued_at=issued_at)


def _signed_bytes(payload: Any, kid: str, issued_at: str) -> bytes:
    return canonical_bytes({"alg": "Ed25519", "kid": kid, "issuedAt": issued_at, "payload": payload})


def verify(receipt: Receipt, payload: Any, keys: Mapping[str, VerifyKey]) -> bool:
    """True when ``receipt`` is a valid signature over ``payload`` by one of ``keys``."""
    return check_task(signature_task(receipt, payload, keys))


class SignatureTask(NamedTuple):
    """One Ed25519 check with everything around it done: the key, the signature, the signed bytes.

    What :func:`verify` does in two halves, so that the costly half (:func:`check_task`) can run
    elsewhere, in another process, with the same verdict.
    """

    key: VerifyKey
    signature: bytes
    message: bytes


def signature_task(receipt: Receipt, payload: Any, keys: Mapping[str, VerifyKey]) -> SignatureTask | None:
    """The check :func:`verify` makes of ``receipt`` over ``payload``; None when it fails before
    any signature is checked (no such key, another algorithm, a signature spelled otherwise)."""
    key = keys.get(receipt.kid)
    if key is None or receipt.alg != "Ed25519":
        return None
    try:
        signature = b64url_decode(receipt.sig)
        # One spelling only: padding, stray characters or spare bits would let a record change
        # while its signatures still check.
        if b64url(signature) != receipt.sig:
            return None
        return SignatureTask(key, signature, _signed_bytes(payload, receipt.kid, receipt.issued_at))
    except ValueError:
        return None


def check_task(task: SignatureTask | None) -> bool:
    """The verdict of one prepared check (False for None: it failed before the signature)."""
    if task is None:
        return False
    try:
        task.key.key.verify(task.signature, task.message)
    except (InvalidSignature, ValueError):
        return False
    return True


RECEIPT_FIELDS = frozenset({"alg", "kid", "sig", "issuedAt"})


def prove_compensate(
    key: SigningKey,
    token: str,
    if_version: str,
    *,
    request_id: str | None = None,
    override: Mapping[str, Any] | None = None,
    if_versions: Mapping[str, str] | None = None,
    issued_at: str,
) -> Receipt:
    """A Recorder's proof for ``hatp_journal_compensate``: its signature over the request."""
    payload = compensate_payload(token_digest(token), if_version, request_id, override, if_versions)
    return key.sign(payload, issued_at)


def strict_receipt(raw: object) -> Receipt | None:
    """A receipt exactly as the wire spells it (camelCase, every field, nothing else), or None."""
    if not isinstance(raw, Mapping) or set(raw) != RECEIPT_FIELDS:
        return None
    try:
        return Receipt.model_validate(dict(raw))
    except ValueError:
        return None


def token_digest(token: str) -> str:
    """The digest that stands for a compensation token wherever the token itself must not go:
    lowercase hex SHA-256 of its UTF-8 bytes (the ``tokenDigest`` of every undo answer)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def without_token(journal: Mapping[str, Any]) -> dict[str, Any]:
    """The journal object as it may be kept and shown: ``compensationToken`` replaced by
    ``compensationTokenDigest``. A call receipt signs this form, so it verifies without the token.

    Raises ``ValueError`` for an object carrying both (which one would the receipt mean?) or a
    token that is not a string.
    """
    if "compensationToken" not in journal:
        return dict(journal)
    token = journal["compensationToken"]
    if not isinstance(token, str) or "compensationTokenDigest" in journal:
        raise ValueError("compensationToken must be a string, and not sent with its digest")
    kept = {k: v for k, v in journal.items() if k != "compensationToken"}
    kept["compensationTokenDigest"] = token_digest(token)
    return kept


def call_payload(journal: Mapping[str, Any], tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What a call receipt signs: the journal object (minus receipt, its token as a digest), the
    tool and the argument digest."""
    return digest_call_payload(journal, tool, sha256_digest(dict(arguments)))


def digest_call_payload(journal: Mapping[str, Any], tool: str, arguments_digest: str) -> dict[str, Any]:
    """:func:`call_payload` when only the arguments' digest is at hand (a Run Record entry)."""
    body = {k: v for k, v in without_token(journal).items() if k != "receipt"}
    return {"journal": body, "tool": tool, "argumentsDigest": arguments_digest}


def compensate_payload(
    digest: str,
    if_version: str,
    request_id: str | None,
    override: Mapping[str, Any] | None,
    if_versions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a Recorder's proof on ``hatp_journal_compensate`` signs: the request, its token as a digest.

    ``ifVersions`` (a call that wrote several resources) is signed only when sent, so the proof of a
    one-resource request is what it always was."""
    request: dict[str, Any] = {
        "tokenDigest": digest,
        "ifVersion": if_version,
        "requestId": request_id,
        "override": dict(override) if override is not None else None,
    }
    if if_versions is not None:
        request["ifVersions"] = dict(if_versions)
    return {"compensate": request}


def answer_payload(answer: Mapping[str, Any]) -> dict[str, Any]:
    """What an undo receipt signs: the check/compensate answer minus its receipt."""
    return {"answer": {k: v for k, v in answer.items() if k != "receipt"}}


def verify_call(
    journal: Mapping[str, Any],
    tool: str,
    arguments: Mapping[str, Any],
    keys: Mapping[str, VerifyKey],
) -> bool:
    """Check a result's journal object (as received, camelCase) against the call that made it."""
    return check_task(call_task(journal, tool, arguments, keys))


def call_task(
    journal: Mapping[str, Any], tool: str, arguments: Mapping[str, Any], keys: Mapping[str, VerifyKey]
) -> SignatureTask | None:
    """:func:`verify_call` up to its signature check (see :func:`signature_task`)."""
    receipt = strict_receipt(journal.get("receipt"))
    try:
        payload = call_payload(journal, tool, arguments)
    except ValueError:
        return None
    return signature_task(receipt, payload, keys) if receipt is not None else None


def verify_digest_call(
    journal: Mapping[str, Any], tool: str, arguments_digest: str, keys: Mapping[str, VerifyKey]
) -> bool:
    """:func:`verify_call` for a journal object kept with only its arguments' digest."""
    return check_task(digest_call_task(journal, tool, arguments_digest, keys))


def digest_call_task(
    journal: Mapping[str, Any], tool: str, arguments_digest: str, keys: Mapping[str, VerifyKey]
) -> SignatureTask | None:
    """:func:`verify_digest_call` up to its signature check (see :func:`signature_task`)."""
    receipt = strict_receipt(journal.get("receipt"))
    try:
        payload = digest_call_payload(journal, tool, arguments_digest)
    except ValueError:
        return None
    return signature_task(receipt, payload, keys) if receipt is not None else None


def verify_answer(answer: Mapping[str, Any], keys: Mapping[str, VerifyKey]) -> bool:
    """Check a check/compensate answer (as received, camelCase) against its receipt."""
    return check_task(answer_task(answer, keys))


def answer_task(answer: Mapping[str, Any], keys: Mapping[str, VerifyKey]) -> SignatureTask | None:
    """:func:`verify_answer` up to its signature check (see :func:`signature_task`)."""
    receipt = strict_receipt(answer.get("receipt"))
    return signature_task(receipt, answer_payload(answer), keys) if receipt is not None else None


def _shown_path(path: Path) -> str:
    """``path`` as an error shows it: a name of thousands of characters is cut, its length said."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:80]}…{text[-40:]} ({len(text)} characters)"
