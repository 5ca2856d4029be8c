"""``hatp-recorder install CLIENT``: the entry an MCP host needs to start this Recorder, printed or
merged into the host's own file.

Desktop and IDE hosts start stdio servers with a minimal PATH and in a folder of their choosing, so
the entry names everything by absolute path: the ``hatp-recorder`` of this installation and the
config file; the config's own relative paths are taken from its folder (``recorder/config.py``).
The config is loaded and every server's command found before anything is printed or written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from hatp_journal._shared.text import json_for_people
from hatp_journal.recorder.config import RUN_KEY_ENV, ConfigError, load_config, missing_commands, with_run_key


class InstallError(Exception):
    """The entry can't be made or written; ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


CLIENTS = ("claude-desktop", "cursor", "vscode", "claude-code")
"""The hosts whose file format this knows (``servers`` for VS Code, ``mcpServers`` for the rest)."""


def default_file(client: str) -> Path:
    """Where ``client`` reads its MCP servers: a user file, or the current project's."""
    home = Path.home()
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
        return home / ".config" / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return Path.cwd() / ".vscode" / "mcp.json"
    return Path.cwd() / ".mcp.json"  # claude-code: the project's shared file


def recorder_command() -> list[str]:
    """How a host starts this installation's Recorder: its ``hatp-recorder`` script, else this Python."""
    python = Path(sys.executable).absolute()  # not resolved: a venv's python is a link to the base one
    script = python.parent / ("hatp-recorder.exe" if sys.platform == "win32" else "hatp-recorder")
    if script.is_file():
        return [str(script)]
    return [str(python), "-m", "hatp_journal.recorder.cli.command_line"]


def entry(client: str, config: Path, run_key: str | None = None) -> dict[str, Any]:
    """The server entry for ``client`` that serves the Recorder configured by ``config``; with
    ``run_key``, every process the host starts for it continues that run (docs/recorder.md)."""
    command, *head = recorder_command()
    made: dict[str, Any] = {"command": command, "args": [*head, "--config", str(config.resolve()), "serve"]}
    if run_key is not None:
        made["env"] = {RUN_KEY_ENV: run_key}
    return {"type": "stdio", **made} if client == "vscode" else made


def install(args: argparse.Namespace) -> int:
    """Run ``install``: 0 printed or written, 2 for bad input (a config that won't serve, a bad file)."""
    try:
        config = load_config(args.config)
        unfound = missing_commands(config, args.config)
        if unfound:
            raise ConfigError("\n".join(unfound))
        if args.run_key is not None:
            with_run_key(config, args.run_key)  # refuses a key that could never be sent back
    except ConfigError as error:
        print(f"hatp-recorder: error: {error}", file=sys.stderr)
        return 2
    made = entry(args.client, args.config, args.run_key)
    key = "servers" if args.client == "vscode" else "mcpServers"
    if args.write is None:
        print(json_for_people({key: {args.name: made}}, indent=2))
        return 0
    target = Path(args.write) if args.write else default_file(args.client)
    try:
        write_entry(target, key, args.name, made, force=args.force)
    except InstallError as error:
        print(f"hatp-recorder: {error.code}: {error}", file=sys.stderr)
        return 2
    print(f"{args.name}: written to {target}")
    return 0


def write_entry(target: Path, key: str, name: str, made: dict[str, Any], *, force: bool) -> None:
    """Merge ``{key: {name: made}}`` into ``target``, keeping everything else in it; never replace
    a different entry of that name unless ``force``; written whole or not at all."""
    document: dict[str, Any] = {}
    if target.exists():
        try:
            loaded = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            said = f"{target} can't be read as JSON ({error}); left as it was"
            raise InstallError("BAD_CLIENT_CONFIG", said) from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get(key, {}), dict):
            raise InstallError("BAD_CLIENT_CONFIG", f"{target}: {key} is not an object; left as it was")
        document = loaded
    servers: dict[str, Any] = document.setdefault(key, {})
    if name in servers and servers[name] != made and not force:
        raise InstallError(
            "ENTRY_EXISTS", f"{target} already has a different {key}.{name}; pass --force to replace it"
        )
    servers[name] = made
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, target)
