"""`hatp-journal`: key files and schemas from the command line; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_schema_writes_one_file_per_wire_model(tmp_path: Path) -> None:
    assert main(["schema", str(tmp_path)]) == 0

    assert {p.name for p in tmp_path.iterdir()} >= {"journal-object.schema.json", "undo-answer.schema.json"}
