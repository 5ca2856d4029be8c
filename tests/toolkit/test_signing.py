"""Receipts: RFC 8785 before signing, Ed25519, known-answer vectors stored as files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode, verify
from hatp_journal.toolkit.wire import PublicKey, Receipt, canonical_bytes

VECTORS = Path(__file__).parent / "vectors"


def vector_key() -> tuple[SigningKey, dict[str, object]]:
    data = json.loads((VECTORS / "receipts.json").read_text(encoding="utf-8"))
    seed = bytes.fromhex(data["secretKeySeedHex"])
    return SigningKey(Ed25519PrivateKey.from_private_bytes(seed)), data


def test_the_vector_key_is_rfc_8032_test_1() -> None:
    key, data = vector_key()

    assert key.public.raw().hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    assert key.public.wire().public_key == data["publicKey"]
    assert key.kid == data["kid"]


def test_rfc_8785_known_answers() -> None:
    vectors = json.loads((VECTORS / "rfc8785.json").read_text(encoding="utf-8"))["vectors"]

    for vector in vectors:
        assert canonical_bytes(json.loads(vector["input"])).decode("utf-8") == vector["canonical"]


def test_receipt_known_answers_sign_the_canonical_bytes_and_verify() -> None:
    key, data = vector_key()
    keys = {key.kid: key.public}

    for vector in data["vectors"]:  # type: ignore[attr-defined]
        receipt = key.sign(vector["payload"], vector["issuedAt"])
        signed = canonical_bytes(
            {"alg": "Ed25519", "kid": key.kid, "issuedAt": vector["issuedAt"], "payload": vector["payload"]}
        )
        assert signed.decode("utf-8") == vector["canonical"]
        assert receipt.sig == vector["sig"]
        assert verify(receipt, vector["payload"], keys)


@given(position=st.integers(0, 63), flip=st.integers(1, 255))
def test_a_receipt_fails_on_any_changed_byte_of_its_signature(position: int, flip: int) -> None:
    key, vectors = vector_key()
    vector = vectors["vectors"][0]  # type: ignore[index]
    receipt = key.sign(vector["payload"], vector["issuedAt"])
    signature = bytearray(b64url_decode(receipt.sig))
    signature[position] ^= flip
    tampered = receipt.model_copy(update={"sig": b64url(bytes(signature))})

    assert not verify(tampered, vector["payload"], {key.kid: key.public})


@given(st.text(min_size=1, max_size=20))
def test_a_receipt_fails_when_the_signed_summary_changes(new_summary: str) -> None:
    key, vectors = vector_key()
    payload = json.loads(json.dumps(vectors["vectors"][0]["payload"]))  # type: ignore[index]
    receipt = key.sign(payload, "2026-11-01T09:00:00Z")
    original = payload["journal"]["effect"]["summary"]
    payload["journal"]["effect"]["summary"] = new_summary

    assert verify(receipt, payload, {key.kid: key.public}) == (new_summary == original)


def test_a_receipt_by_another_key_or_with_another_issue_time_fails() -> None:
    key, _ = vector_key()
    other = SigningKey.generate()
    receipt = key.sign({"a": 1}, "2026-11-01T09:00:00Z")

    assert not verify(receipt, {"a": 1}, {other.kid: other.public})
    impostor = Receipt(kid=key.kid, sig=receipt.sig, issued_at="2026-11-01T09:00:01Z")
    assert not verify(impostor, {"a": 1}, {key.kid: key.public})


def test_keys_round_trip_through_a_file_and_the_wire(tmp_path: Path) -> None:
    key = SigningKey.generate()
    key.save(tmp_path / "k.pem")

    loaded = SigningKey.from_file(tmp_path / "k.pem")

    assert loaded.kid == key.kid
    assert (tmp_path / "k.pem").stat().st_mode & 0o077 == 0
    assert VerifyKey.from_wire(key.public.wire()).kid == key.kid


def test_a_published_key_whose_kid_does_not_match_its_bytes_is_refused() -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    lying = PublicKey(kid=other.kid, public_key=b64url(key.public.raw()))

    with pytest.raises(KeyFileError):
        VerifyKey.from_wire(lying)


def test_a_missing_or_malformed_key_file_is_a_key_file_error(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a key")

    with pytest.raises(KeyFileError):
        SigningKey.from_file(tmp_path / "missing.pem")
    with pytest.raises(KeyFileError):
        SigningKey.from_file(tmp_path / "bad.pem")
