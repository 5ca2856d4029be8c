"""The witness's parts in this process: its store on SQLite and PostgreSQL, its refusals that need no
network, and the ``[[witnesses]]`` of recorder.toml (the processes: test_witnessed_heads.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hatp_journal.recorder.config import ConfigError, load_config
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.witness.cli import main as witness_cli
from hatp_journal.recorder.witness.cosign import Refusal, Witness
from hatp_journal.recorder.witness.sender import WitnessSender
from hatp_journal.recorder.witness.store import WitnessStore
from hatp_journal.recorder.witness.wire import CosignRequest, WitnessCode
from hatp_journal.toolkit.signing import SigningKey, b64url


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[RunStore, str]:
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    run = store.open_run(agent="bot", principal="human://acme.com/dana").id
    for n in range(2):
        store.append(run, "note", {"n": n, "text": "tab\there, nul \u0000, bell \u0007"})
    yield store, run
    store.dispose()


def first_request(store: RunStore, run: str) -> CosignRequest:
    head = store.checkpoint(run, "manual")
    return CosignRequest(
        checkpoint=head,
        recorder_key=store.public_key.wire(),
        since=0,
        entries=[b64url(data) for data in store.entry_bytes(run, 0, head.size)],
        run=store.run(run),
    )


def test_a_witness_store_keeps_one_head_per_run_and_size_and_answers_the_latest(
    store_url: str, recorded: tuple[RunStore, str]
) -> None:
    store, run = recorded
    witnesses = WitnessStore(store_url)
    try:
        witness = Witness("alpha", SigningKey.generate(), witnesses)
        cosigned = witness.cosign(run, first_request(store, run))

        assert witnesses.latest(run) == cosigned
        assert witnesses.keep(cosigned) is False  # a second head of that size is never kept
        assert witnesses.latest("run_nobody_sent") is None
    finally:
        witnesses.dispose()


def test_a_witness_refuses_a_head_of_another_run_a_first_head_without_its_run_and_a_forged_genesis(
    tmp_path: Path, recorded: tuple[RunStore, str]
) -> None:
    store, run = recorded
    witness = Witness("alpha", SigningKey.generate(), WitnessStore(tmp_path / "alpha.db"))
    request = first_request(store, run)
    other_run = store.run(run).model_copy(update={"agent": "someone-else"})
    cases = {
        "run_elsewhere": (request, WitnessCode.WITNESS_BAD_REQUEST),
        run: (request.model_copy(update={"run": None}), WitnessCode.WITNESS_BAD_REQUEST),
    }
    for path, (asked, code) in cases.items():
        with pytest.raises(Refusal) as refused:
            witness.cosign(path, asked)
        assert refused.value.code == code
    with pytest.raises(Refusal) as refused:
        witness.cosign(run, request.model_copy(update={"run": other_run}))  # genesis of other fields
    assert refused.value.code == WitnessCode.WITNESS_NOT_EXTENDING
    assert witness.store.latest(run) is None
    witness.store.dispose()


def write_config(folder: Path, witnesses: str) -> Path:
    config = folder / "recorder.toml"
    config.write_text('[servers.notes]\nurl = "http://127.0.0.1:9/x"\n' + witnesses)
    return config


def test_the_witnesses_of_recorder_toml_have_their_keys_from_its_folder_and_distinct_names(
    tmp_path: Path,
) -> None:
    key = SigningKey.generate()
    (tmp_path / "alpha.pub.json").write_text(json.dumps(key.public.wire().wire()))
    table = '[[witnesses]]\nname = "alpha"\nurl = "http://127.0.0.1:8767"\nkey = "alpha.pub.json"\n'

    config = load_config(write_config(tmp_path, table))

    assert config.witnesses[0].key == str((tmp_path / "alpha.pub.json").resolve())
    with pytest.raises(ConfigError, match="same name"):
        load_config(write_config(tmp_path, table * 2))
    with pytest.raises(ConfigError, match="url"):
        load_config(write_config(tmp_path, table.replace("http://", "ftp://")))


def test_a_witness_whose_key_cannot_be_read_stops_the_recorder_with_a_config_error(
    tmp_path: Path, recorded: tuple[RunStore, str]
) -> None:
    table = '[[witnesses]]\nname = "alpha"\nurl = "http://127.0.0.1:8767"\nkey = "missing.pub.json"\n'
    config = load_config(write_config(tmp_path, table))

    with pytest.raises(ConfigError, match="witness alpha"):
        WitnessSender(recorded[0], config.witnesses)


def test_hatp_witness_prints_its_public_key_and_refuses_a_bad_name_or_key_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "alpha.key"

    assert witness_cli(["pubkey", "--key", str(key)]) == 0
    published = json.loads(capsys.readouterr().out)
    assert published == SigningKey.from_file(key).public.wire().wire()
    assert witness_cli(["serve", "--key", str(key), "--name", "Alpha\u0007"]) == 2
    assert "--name" in capsys.readouterr().err
    (tmp_path / "broken.key").write_text("not a key")
    assert (
        witness_cli(["serve", "--key", str(tmp_path / "broken.key"), "--store", str(tmp_path / "w.db")]) == 2
    )
    assert "hatp-witness: error:" in capsys.readouterr().err
    assert not (tmp_path / "w.db").exists()
