"""`hatp-recorder`: config errors name the line; asks are decided; records export and verify."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hatp_journal._shared.files import MAX_KEY_BYTES, MAX_TEXT_BYTES
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import MAX_CONFIG_BYTES
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.asks import Asks
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


def test_a_decision_signed_with_the_wrong_key_or_made_twice_exits_2_with_its_code(
    setup: tuple[Path, RunStore, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store, ask = setup
    SigningKey.generate().save(tmp_path / "stolen.key")
    config = ["--config", str(folder / "recorder.toml")]

    wrong = main([*config, "approve", ask, "--as", "lee", "--key", str(tmp_path / "stolen.key")])
    wrong_err = capsys.readouterr().err
    first = main([*config, "approve", ask, "--as", "lee", "--key", str(folder / "lee.key")])
    capsys.readouterr()
    twice = main([*config, "deny", ask, "--as", "lee", "--key", str(folder / "lee.key")])
    twice_err = capsys.readouterr().err

    assert (wrong, first, twice) == (2, 0, 2)
    assert wrong_err.startswith("hatp-recorder: WRONG_KEY: not counted: the key used is not lee's key")
    assert twice_err.startswith("hatp-recorder: ALREADY_DECIDED: your deny was recorded but not counted")
    counted = [e.body["counted"] for e in store.entries(ask.rpartition("/")[0]) if e.kind == "decision"]
    assert counted == [False, True, False]


def test_someone_not_in_the_directory_is_not_counted(
    setup: tuple[Path, RunStore, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
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

    assert code == 2
    assert "hatp-recorder: NOT_PERMITTED: not counted: " in capsys.readouterr().err
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


def test_verify_imports_neither_the_gateway_nor_the_store_commands_nor_the_mcp_stack(
    setup: tuple[Path, RunStore, str],
) -> None:
    folder, _, ask = setup
    config = ["--config", str(folder / "recorder.toml")]
    assert main([*config, "export", ask.rpartition("/")[0], "--out", str(folder / "r.json")]) == 0
    heavy = ["hatp_journal.recorder.cli.commands", "hatp_journal.recorder.gateway", "mcp", "sqlalchemy"]
    code, loaded, _ = _run_in_a_fresh_process(["verify", str(folder / "r.json")], heavy)
    assert (code, loaded) == (0, [])  # verified (keys taken from the file), nothing heavy loaded


def _run_in_a_fresh_process(argv: list[str], heavy: list[str]) -> tuple[int, list[str], str]:
    """``hatp-recorder ARGV`` in a new Python process: its exit code, which of ``heavy`` it loaded,
    and its stderr."""
    program = (
        "import sys\n"
        "from hatp_journal.recorder.cli.command_line import main\n"
        f"code = main({argv!r})\n"
        f"print(code, [name for name in {heavy!r} if name in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    code, _, loaded = done.stdout.splitlines()[-1].partition(" ")
    return int(code), ast.literal_eval(loaded), done.stderr


def test_approving_an_agents_call_loads_neither_the_undo_commands_nor_the_mcp_stack(
    setup: tuple[Path, RunStore, str],
) -> None:
    folder, store, ask = setup
    heavy = ["hatp_journal.recorder.undo.commands", "hatp_journal.recorder.gateway", "mcp", "fastmcp"]
    argv = ["--config", str(folder / "recorder.toml"), "approve", ask, "--as", "lee"]
    code, loaded, stderr = _run_in_a_fresh_process([*argv, "--key", str(folder / "lee.key")], heavy)

    assert (code, loaded) == (0, []), stderr
    assert [e.kind for e in store.entries(ask.rpartition("/")[0])] == ["ask", "decision"]


def test_verify_prints_an_entry_id_from_a_forged_record_escaped_so_it_cannot_pass_for_the_verdict(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, ask = setup
    config = ["--config", str(folder / "recorder.toml")]
    assert main([*config, "export", ask.rpartition("/")[0], "--out", str(folder / "r.json")]) == 0
    text = (folder / "r.json").read_text()
    forged = "e1\\nok: 2 entries, 2 signed, 0 signatures of tool servers checked\\u001b[2K"
    (folder / "r.json").write_text(text.replace('"id":"e1"', f'"id":"{forged}"', 1))
    capsys.readouterr()

    assert main(["verify", str(folder / "r.json")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith(("ok:", "FAILED:"))] == [lines[-1]]
    assert lines[-1].startswith("FAILED: ")
    assert "\x1b" not in "".join(lines)


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


DEEP = 100_000  # deeper than any parser can recurse

CONFIG_SERVERS = b'[servers.crm]\ncommand = "/bin/true"\n'  # a server that starts and says nothing


def told_error(capsys: pytest.CaptureFixture[str], path: Path, line: int | None) -> None:
    """The one line on stderr names ``path`` and, where given, the line, as ``path:line:``."""
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(
        f"hatp-recorder: error: {path}:{line}:" if line else f"hatp-recorder: error: {path}: "
    )


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b'[recorder]\nagent = "caf\xe9"\n' + CONFIG_SERVERS, 2),
        (b"# \n" * (MAX_CONFIG_BYTES // 3 + 1), None),
        (CONFIG_SERVERS + b"args = " + b"[" * DEEP + b"]" * DEEP + b"\n", 3),
        (CONFIG_SERVERS + b"env." + b".".join([b"b"] * DEEP) + b' = "x"\n', 3),
        (CONFIG_SERVERS + b"[" + b".".join([b"b"] * 40) + b"]\n" + b".".join([b"c"] * 40) + b" = 1\n", None),
        (None, None),
        (b"", None),
        (b"\n[recorder\n", 2),
        (b"[recorder]\n" + CONFIG_SERVERS + b'args = ["serve"\n', 4),
        (b'[recorder]\nagent = "bot"\n\n[servers.crm]\nargs = ["serve"]\n', 4),
    ],
    ids=[
        "not-utf8",
        "too-large",
        "arrays-too-deep",
        "dotted-keys-too-deep",
        "header-and-keys-too-deep",
        "folder",
        "empty",
        "toml-syntax",
        "unclosed-at-the-end",
        "wrong-shape",
    ],
)
def test_a_config_file_that_cannot_be_used_exits_2_naming_the_file_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, line: int | None
) -> None:
    config = tmp_path / "recorder.toml"
    if content is None:
        config.mkdir()
    else:
        config.write_bytes(content)

    assert main(["--config", str(config), "runs"]) == 2
    told_error(capsys, config, line)
    assert not (tmp_path / "recorder.db").exists()


def test_a_missing_config_file_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "missing.toml"), "runs"]) == 2
    told_error(capsys, tmp_path / "missing.toml", None)


def test_a_config_file_that_starts_with_a_byte_order_mark_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recorder.toml").write_bytes(b"\xef\xbb\xbf" + CONFIG_SERVERS)

    assert main(["--config", str(tmp_path / "recorder.toml"), "runs"]) == 0
    assert capsys.readouterr().err == ""


def test_asks_without_a_directory_in_the_config_are_refused_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recorder.toml").write_text('[servers.crm]\ncommand = "hatp-crm"\n')

    assert main(["--config", str(tmp_path / "recorder.toml"), "asks"]) == 2
    assert (
        capsys.readouterr().err
        == "hatp-recorder: error: [recorder] directory is not set: nobody can decide asks\n"
    )


def test_verify_of_a_record_file_it_cannot_read_is_bad_input_not_a_failed_record(
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

    assert no_file == 2
    [said] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hatp-recorder")]
    assert said.startswith(f"hatp-recorder: error: cannot read {folder / 'missing.json'}: ")


def published_key(folder: Path) -> dict[str, str]:
    return SigningKey.from_file(folder / "recorder.key").public.wire().model_dump(by_alias=True)


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (None, None),
        (b"", None),
        (b" " * (MAX_KEY_BYTES + 1), None),
        (b'{\n"kid": "caf\xe9"}', 2),
        (b'{\n"kid": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", 2),  # within the size limit
        (b'{"kty": "OKP"', None),
        (b'{"kid": "ed25519-somebody-else", "publicKey": "%s"}', None),
        (b"-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n", None),
    ],
    ids=["folder", "empty", "too-large", "not-utf8", "too-deep", "not-json", "kid-not-its-key", "not-pem"],
)
def test_verify_with_a_recorder_key_file_that_cannot_be_used_exits_2_naming_it(
    setup: tuple[Path, RunStore, str],
    capsys: pytest.CaptureFixture[str],
    content: bytes | None,
    line: int | None,
) -> None:
    folder, _, ask = setup
    export = ["--config", str(folder / "recorder.toml"), "export", ask.rpartition("/")[0]]
    assert main([*export, "--out", str(folder / "r.json")]) == 0
    capsys.readouterr()
    pinned = folder / "recorder.pub"
    if content is None:
        pinned.mkdir()
    else:
        pinned.write_bytes(content.replace(b"%s", published_key(folder)["publicKey"].encode()))

    assert main(["verify", str(folder / "r.json"), "--recorder-key", str(pinned)]) == 2
    told_error(capsys, pinned, line)


def test_verify_reads_a_published_key_saved_with_a_byte_order_mark(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, ask = setup
    export = ["--config", str(folder / "recorder.toml"), "export", ask.rpartition("/")[0]]
    assert main([*export, "--out", str(folder / "r.json")]) == 0
    (folder / "recorder.pub").write_bytes(b"\xef\xbb\xbf" + json.dumps(published_key(folder)).encode())

    assert main(["verify", str(folder / "r.json"), "--recorder-key", str(folder / "recorder.pub")]) == 0


LEE_KEY = "%LEE%"  # replaced by Lee's real public key


@pytest.mark.parametrize(
    ("directory", "line"),
    [
        (b'{"people": [\n', 2),
        (b'{"people": [\n  {"id": "lee"}\n]}', 2),
        (b'{"people": [],\n "admins": []}', 2),
        (b'{"people": [\n  {"id": "lee",\n   "roles": [],\n   "publicKey": "not-a-key"}\n]}', 4),
        (b'{"people": [\n  {"id": "lee", "id": "eve", "publicKey": "%LEE%"}\n]}', 2),
        (b'{"people": [\n  {"id": "l\xe9e", "publicKey": "%LEE%"}\n]}', 2),
        (b'{"people":\n' + b"[" * DEEP + b"]" * DEEP + b"}", 2),
        (b" " * (MAX_TEXT_BYTES + 1), None),
        (None, None),
        (b"\n", None),
    ],
    ids=[
        "not-json",
        "no-public-key",
        "unknown-field",
        "malformed-public-key",
        "duplicate-key",
        "not-utf8",
        "too-deep",
        "too-large",
        "folder",
        "empty",
    ],
)
def test_a_directory_that_cannot_be_used_is_refused_naming_the_file_and_line_and_the_ask_stays_pending(
    setup: tuple[Path, RunStore, str],
    capsys: pytest.CaptureFixture[str],
    directory: bytes | None,
    line: int | None,
) -> None:
    folder, store, ask = setup
    path = folder / "directory.json"
    lee = json.loads(path.read_text())["people"][0]["publicKey"]
    path.unlink()
    if directory is None:
        path.mkdir()
    else:
        path.write_bytes(directory.replace(LEE_KEY.encode(), lee.encode()))

    code = approve_as_lee(folder, ask)

    assert code == 2
    told_error(capsys, path, line)
    assert [e.kind for e in store.entries(ask.rpartition("/")[0])] == ["ask"]


def test_a_directory_that_starts_with_a_byte_order_mark_is_read(
    setup: tuple[Path, RunStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, store, ask = setup
    path = folder / "directory.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    assert approve_as_lee(folder, ask) == 0
    assert [e.kind for e in store.entries(ask.rpartition("/")[0])] == ["ask", "decision"]


def test_hatp_recorder_refuses_a_config_that_is_not_utf8_in_its_own_process_without_a_traceback(
    tmp_path: Path,
) -> None:
    (tmp_path / "recorder.toml").write_bytes(b'[recorder]\nagent = "caf\xe9"\n' + CONFIG_SERVERS)
    (tmp_path / "policy.json").write_bytes(b'{"autonomy":\n' + b"[" * DEEP + b"]" * DEEP + b"}")
    (tmp_path / "deep.toml").write_bytes(b'[recorder]\npolicy = "policy.json"\n' + CONFIG_SERVERS)
    recorder = Path(sys.executable).parent / "hatp-recorder"

    runs = [
        subprocess.run(
            [recorder, "--config", str(tmp_path / name), command],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        for name, command in (("recorder.toml", "runs"), ("deep.toml", "serve"))
    ]

    assert [run.returncode for run in runs] == [2, 2]
    assert [run.stderr.splitlines()[0].split(": ")[:2] for run in runs] == [["hatp-recorder", "error"]] * 2
    assert [len(run.stderr.splitlines()) for run in runs] == [1, 1]  # no traceback
    assert runs[0].stderr.startswith(f"hatp-recorder: error: {tmp_path / 'recorder.toml'}:2:")
    assert runs[1].stderr.startswith(f"hatp-recorder: error: {tmp_path / 'policy.json'}:2:")


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
