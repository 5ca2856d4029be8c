"""`hatp-recorder install` and the config's paths: nothing depends on the folder or PATH a host starts in."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import load_config

CONFIG = '[servers.crm]\ncommand = "hatp-crm"\nargs = ["serve", "--db", "var/crm.db"]\n'


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "org").mkdir()
    path = tmp_path / "org" / "recorder.toml"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize(
    ("client", "key"),
    [
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("claude-code", "mcpServers"),
        ("vscode", "servers"),
    ],
)
def test_install_prints_an_entry_with_absolute_paths_in_each_hosts_format(
    config: Path, capsys: pytest.CaptureFixture[str], client: str, key: str
) -> None:
    assert main(["--config", str(config), "install", client]) == 0

    [(name, entry)] = json.loads(capsys.readouterr().out)[key].items()
    assert name == "hatp"
    assert Path(entry["command"]).is_absolute()
    assert os.access(entry["command"], os.X_OK)
    assert entry["args"][-3:] == ["--config", str(config.resolve()), "serve"]
    assert ("type" in entry) == (client == "vscode")
    assert "env" not in entry


def test_install_merges_into_the_hosts_file_and_keeps_what_else_is_there(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps({"mcpServers": {"other": {"command": "/bin/true"}}, "theme": "dark"}))

    assert (
        main(
            ["--config", str(config), "install", "cursor", "--write", str(host), "--run-key", "dana-2026-12"]
        )
        == 0
    )

    written = json.loads(host.read_text())
    assert written["theme"] == "dark"
    assert written["mcpServers"]["other"] == {"command": "/bin/true"}
    assert written["mcpServers"]["hatp"]["env"] == {"HATP_RUN_KEY": "dana-2026-12"}
    assert (
        main(
            ["--config", str(config), "install", "cursor", "--write", str(host), "--run-key", "dana-2026-12"]
        )
        == 0
    )


def test_install_never_replaces_a_different_entry_unasked_nor_a_file_it_cannot_read(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = tmp_path / "host.json"
    theirs = json.dumps({"mcpServers": {"hatp": {"command": "/opt/old/hatp-recorder"}}})
    host.write_text(theirs)

    assert main(["--config", str(config), "install", "cursor", "--write", str(host)]) == 2
    assert "ENTRY_EXISTS" in capsys.readouterr().err
    assert host.read_text() == theirs
    assert main(["--config", str(config), "install", "cursor", "--write", str(host), "--force"]) == 0
    assert json.loads(host.read_text())["mcpServers"]["hatp"]["args"][-1] == "serve"

    host.write_text("{not json")
    assert main(["--config", str(config), "install", "cursor", "--write", str(host)]) == 2
    assert "BAD_CLIENT_CONFIG" in capsys.readouterr().err
    assert host.read_text() == "{not json"
    assert main(["--config", str(config), "install", "cursor", "--run-key", "no spaces allowed"]) == 2


def test_a_config_read_from_another_folder_resolves_every_path_against_its_own_folder(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    loaded = load_config(Path("org/recorder.toml"))

    org = tmp_path / "org"
    assert loaded.recorder.store == str(org / "recorder.db")
    assert loaded.recorder.policy == str(org / "policy.json")
    assert loaded.servers["crm"].cwd == str(org)  # so --db var/crm.db is org/var/crm.db
    assert loaded.servers["crm"].command == str(Path(sys.executable).parent / "hatp-crm")


def test_a_command_found_nowhere_is_refused_at_start_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "recorder.toml"
    path.write_text(
        '[recorder]\nagent = "bot"\n\n[servers.notes]\nargs = []\ncommand = "no-such-notes-server"\n'
    )

    assert main(["--config", str(path), "serve"]) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"hatp-recorder: error: {path}:6: servers.notes.command: 'no-such-notes-server'")
    assert main(["--config", str(path), "install", "vscode"]) == 2
