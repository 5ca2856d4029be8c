"""`hatp-recorder`: config errors name the line; asks are decided; records export and verify."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hatp_journal.recorder.asks import Asks
from hatp_journal.recorder.cli import main
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

LEAD = "human://acme.com/role/team-lead"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, RunStore, str]:
    lee = SigningKey.generate()
    lee.save(tmp_path / "lee.key")
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (tmp_path / "directory.json").write_text(json.dumps({"people": people}))
    (tmp_path / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\ndirectory = "directory.json"\n'
        '[servers.crm]\ncommand = "hatp-crm"\n'
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.load_or_create(tmp_path / "recorder.key"))
    run = store.open_run(agent="sales-bot", principal="dana")
    body = {
        "server": "crm",
        "tool": "export_report",
        "arguments": {},
        "decision": {"action": "ask", "reasons": [{"code": "IRREVERSIBLE", "detail": "cannot be undone"}]},
    }
    far = datetime(2099, 1, 1, tzinfo=UTC)
    ask = Asks(store).open(run.id, body, now=far, approver=LEAD, within=None)
    return tmp_path, store, f"{run.id}/{ask.id}"


def approve_as_lee(folder: Path, ask: str) -> int:
    """``hatp-recorder approve ASK --as lee`` with Lee's key; its exit status."""
    return main(
        [
            "--config",
            str(folder / "recorder.toml"),
            "approve",
            ask,
            "--as",
            "lee",
            "--key",
            str(folder / "lee.key"),
        ]
    )


def test_a_run_record_store_that_is_not_a_database_is_bad_input_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recorder.db").write_text("these are notes, not a database " * 10)
    (tmp_path / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\n[servers.crm]\ncommand = "hatp-crm"\n'
    )

    status = main(["--config", str(tmp_path / "recorder.toml"), "runs"])

    assert status == 2
    assert "cannot open the store" in capsys.readouterr().err
    assert (tmp_path / "recorder.db").read_text().startswith("these are notes")


def test_a_config_with_an_error_is_refused_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.toml").write_text('[recorder]\nagent = "bot"\n\n[servers.crm]\nargs = ["serve"]\n')

    assert main(["--config", str(tmp_path / "bad.toml"), "runs"]) == 2
    assert "bad.toml:4" in capsys.readouterr().err


def test_a_pending_ask_is_listed_and_approved_with_the_persons_key(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store, ask = setup
    config = ["--config", str(folder / "recorder.toml")]

    assert main([*config, "asks"]) == 0
    assert ask in capsys.readouterr().out
    assert main([*config, "approve", ask, "--as", "lee", "--key", str(folder / "lee.key")]) == 0
    assert "latest signed head" in capsys.readouterr().out
    assert main([*config, "asks"]) == 0
    assert ask not in capsys.readouterr().out
    run = ask.rpartition("/")[0]
    assert [e.kind for e in store.entries(run)] == ["ask", "decision"]


def test_someone_not_in_the_directory_is_not_counted(
    setup: tuple[Path, RunStore, str], tmp_path: Path
) -> None:
    folder, store, ask = setup
    SigningKey.generate().save(tmp_path / "mallory.key")

    code = main(
        [
            "--config",
            str(folder / "recorder.toml"),
            "deny",
            ask,
            "--as",
            "mallory",
            "--key",
            str(tmp_path / "mallory.key"),
        ]
    )

    assert code == 1
    decision = store.entries(ask.rpartition("/")[0])[-1]
    assert decision.body["counted"] is False


def test_an_exported_record_verifies_with_the_pinned_public_key_and_a_changed_byte_fails(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, ask = setup
    config = ["--config", str(folder / "recorder.toml")]
    assert main([*config, "export", ask.rpartition("/")[0], "--out", str(folder / "r.json")]) == 0
    public = SigningKey.from_file(folder / "recorder.key").public.wire().model_dump_json(by_alias=True)
    (folder / "recorder.pub").write_text(public)

    assert main(["verify", str(folder / "r.json"), "--recorder-key", str(folder / "recorder.pub")]) == 0
    data = bytearray((folder / "r.json").read_bytes())
    data[data.index(b"export_report") + 1] ^= 0x01
    (folder / "r.json").write_bytes(bytes(data))
    assert main(["verify", str(folder / "r.json"), "--recorder-key", str(folder / "recorder.pub")]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_show_and_export_of_a_run_that_does_not_exist_say_unknown_run_and_write_nothing(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, _ = setup
    config = ["--config", str(folder / "recorder.toml")]

    codes = [
        main([*config, "show", "run_nope"]),
        main([*config, "show", "run_nope", "--json"]),
        main([*config, "export", "run_nope", "--out", str(folder / "r.json")]),
    ]

    assert codes == [2, 2, 2]
    told = capsys.readouterr()
    assert told.out == ""
    assert told.err.splitlines() == ["hatp-recorder: UNKNOWN_RUN: no run 'run_nope'"] * 3
    assert not (folder / "r.json").exists()


@pytest.mark.parametrize(
    ("which", "said"),
    [("run_nope/e1", "UNKNOWN_RUN: no run 'run_nope'"), ("{run}/e9", "error: no ask {run}/e9")],
)
def test_deciding_an_ask_that_does_not_exist_is_refused_and_records_nothing(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str], which: str, said: str
) -> None:
    folder, store, ask = setup
    run = ask.rpartition("/")[0]
    ref = which.format(run=run)

    code = main(
        [
            "--config",
            str(folder / "recorder.toml"),
            "deny",
            ref,
            "--as",
            "lee",
            "--key",
            str(folder / "lee.key"),
        ]
    )

    assert code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == "hatp-recorder: " + said.format(run=run)
    assert [e.kind for e in store.entries(run)] == ["ask"]


def test_a_config_file_that_is_missing_or_not_toml_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.toml").write_text("[recorder\n")

    assert main(["--config", str(tmp_path / "missing.toml"), "runs"]) == 2
    assert main(["--config", str(tmp_path / "broken.toml"), "runs"]) == 2

    missing, broken = capsys.readouterr().err.splitlines()
    assert missing.startswith(f"hatp-recorder: error: {tmp_path / 'missing.toml'}: ")
    assert broken.startswith(f"hatp-recorder: error: {tmp_path / 'broken.toml'}: ")


def test_asks_without_a_directory_in_the_config_are_refused_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recorder.toml").write_text('[servers.crm]\ncommand = "hatp-crm"\n')

    assert main(["--config", str(tmp_path / "recorder.toml"), "asks"]) == 2
    assert (
        capsys.readouterr().err
        == "hatp-recorder: error: [recorder] directory is not set: nobody can decide asks\n"
    )


def test_verify_of_a_file_or_key_it_cannot_read_is_bad_input_not_a_failed_record(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, ask = setup
    assert (
        main(
            [
                "--config",
                str(folder / "recorder.toml"),
                "export",
                ask.rpartition("/")[0],
                "--out",
                str(folder / "r.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()

    no_file = main(["verify", str(folder / "missing.json"), "--recorder-key", str(folder / "recorder.key")])
    no_key = main(["verify", str(folder / "r.json"), "--recorder-key", str(folder / "missing.pub")])
    (folder / "garbled.pub").write_text('{"kty": "OKP"')
    bad_key = main(["verify", str(folder / "r.json"), "--recorder-key", str(folder / "garbled.pub")])

    assert (no_file, no_key, bad_key) == (2, 2, 2)
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hatp-recorder")]
    assert [line.split(": ")[:2] for line in err] == [["hatp-recorder", "error"]] * 3
    assert ["missing.json" in err[0], "missing.pub" in err[1], "garbled.pub" in err[2]] == [True] * 3


@pytest.mark.parametrize(
    "directory",
    ['{"people": [', '{"people": [{"id": "lee"}]}', '{"people": [], "admins": []}'],
    ids=["not-json", "no-public-key", "unknown-field"],
)
def test_a_directory_that_cannot_be_used_is_refused_naming_the_file_and_the_ask_stays_pending(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str], directory: str
) -> None:
    folder, store, ask = setup
    (folder / "directory.json").write_text(directory)

    code = approve_as_lee(folder, ask)

    assert code == 2
    assert capsys.readouterr().err.startswith(f"hatp-recorder: error: {folder / 'directory.json'}: ")
    assert [e.kind for e in store.entries(ask.rpartition("/")[0])] == ["ask"]


def test_an_approval_by_a_person_whose_listed_key_is_malformed_is_not_counted(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store, ask = setup
    people = [{"id": "lee", "roles": [LEAD], "publicKey": "not-a-key"}]
    (folder / "directory.json").write_text(json.dumps({"people": people}))

    code = approve_as_lee(folder, ask)

    assert code == 1
    assert "publicKey is not an Ed25519 key" in capsys.readouterr().out
    decision = store.entries(ask.rpartition("/")[0])[-1]
    assert (decision.kind, decision.body["counted"]) == ("decision", False)


@pytest.mark.parametrize(
    ("server", "said"),
    [
        ('command = "/nonexistent/hatp-crm"', "crm could not be started: "),
        (
            f"command = {json.dumps(sys.executable)}\n"
            'args = ["-m", "hatp_journal.servers.crm.cli", "serve", "--db", "crm.db"]\n'
            'pin = ["ed25519-not-the-crm-key"]',
            "crm does not offer the pinned keys ['ed25519-not-the-crm-key']",
        ),
    ],
    ids=["does-not-start", "not-the-pinned-key"],
)
def test_serve_refuses_to_start_when_a_tool_server_cannot_be_used_and_opens_no_run(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], server: str, said: str
) -> None:
    (tmp_path / "policy.json").write_text("{}")
    (tmp_path / "recorder.toml").write_text(f"[servers.crm]\ncwd = {json.dumps(str(tmp_path))}\n{server}\n")

    code = main(["--config", str(tmp_path / "recorder.toml"), "serve"])

    assert code == 2
    [told] = [line for line in capfd.readouterr().err.splitlines() if line.startswith("hatp-recorder")]
    assert told.startswith(f"hatp-recorder: DOWNSTREAM_FAILED: {said}")
    store = RunStore(tmp_path / "recorder.db", SigningKey.load_or_create(tmp_path / "recorder.key"))
    assert store.runs() == []
