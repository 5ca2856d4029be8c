"""`hatp-journal`: key files and schemas from the command line; bad input exits 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from hatp_journal._shared.files import MAX_KEY_BYTES
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit._cli import main


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


def ec_key() -> bytes:
    other = ec.generate_private_key(ec.SECP256R1())
    return other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.mark.parametrize(
    "content",
    [
        None,
        "folder",
        b"",
        b"-" * (MAX_KEY_BYTES + 1),
        b"\x30\x82\xff\x00 a DER key",
        b"\xef\xbb\xbf\n",
        ec_key,
    ],
    ids=["missing", "folder", "empty", "too-large", "binary", "only-a-bom", "not-ed25519"],
)
def test_pubkey_of_a_key_file_that_cannot_be_used_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | str | Callable[[], bytes] | None
) -> None:
    path = tmp_path / "k.pem"
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif callable(content):
        path.write_bytes(content())

    assert main(["pubkey", str(path)]) == 2

    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(f"error: {path}: ")


def test_a_key_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    key = SigningKey.generate()
    key.save(tmp_path / "k.pem")
    (tmp_path / "bom.pem").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "k.pem").read_bytes())

    assert SigningKey.from_file(tmp_path / "bom.pem").kid == key.kid


def test_keygen_into_a_folder_that_is_a_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").write_text("x")

    assert main(["keygen", str(tmp_path / "plain" / "k.pem")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert (tmp_path / "plain").read_text() == "x"


def test_schema_writes_one_file_per_wire_model(tmp_path: Path) -> None:
    assert main(["schema", str(tmp_path)]) == 0

    assert {p.name for p in tmp_path.iterdir()} >= {"journal-object.schema.json", "undo-answer.schema.json"}
