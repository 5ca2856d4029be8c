"""`hatp-journal`: key files and schemas from the command line; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.cli import main


def test_keygen_writes_a_private_key_and_pubkey_prints_its_kid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", str(tmp_path / "k.pem")]) == 0
    kid = capsys.readouterr().out.strip()

    assert main(["pubkey", str(tmp_path / "k.pem")]) == 0
    published = json.loads(capsys.readouterr().out)

    assert published["kid"] == kid == SigningKey.from_file(tmp_path / "k.pem").kid


def test_keygen_refuses_to_overwrite_and_a_bad_key_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "k.pem").write_text("precious")
    (tmp_path / "bad.pem").write_text("not a key")

    assert main(["keygen", str(tmp_path / "k.pem")]) == 2
    assert main(["pubkey", str(tmp_path / "bad.pem")]) == 2
    assert (tmp_path / "k.pem").read_text() == "precious"
    assert "error:" in capsys.readouterr().err


def test_pubkey_of_a_folder_or_a_key_that_is_not_ed25519_exits_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = ec.generate_private_key(ec.SECP256R1())
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "ec.pem").write_bytes(pem)

    assert main(["pubkey", str(tmp_path)]) == 2
    assert main(["pubkey", str(tmp_path / "ec.pem")]) == 2

    folder, not_ed25519 = capsys.readouterr().err.splitlines()
    assert folder.startswith(f"error: cannot read the key file {tmp_path}: ")
    assert not_ed25519.startswith(f"error: {tmp_path / 'ec.pem'} holds a ")
    assert not_ed25519.endswith(", not an Ed25519 key")


def test_schema_writes_one_file_per_wire_model(tmp_path: Path) -> None:
    assert main(["schema", str(tmp_path)]) == 0

    assert {p.name for p in tmp_path.iterdir()} >= {"journal-object.schema.json", "undo-answer.schema.json"}
