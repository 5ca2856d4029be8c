"""The world the D-881 story plays in: Acme's people, policy, Recorder configuration and mail sink.

Everything is written into one working directory and every part runs as its own process, exactly
as an organisation would run it: ``hatp-mailsink``, the three demo servers (started by the
Recorder over stdio), ``hatp-recorder serve`` for the agent, and ``hatp-recorder`` commands for
the people.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hatp_journal.toolkit.signing import SigningKey, b64url

AGENT = "sales-bot"
SENDER = "sales-bot@acme.com"
DANA = "human://acme.com/dana"
LEE = "human://acme.com/lee"
TEAM_LEAD = "human://acme.com/role/team-lead"
ATTENDEES = ["buyer@globex.com", "lee@acme.com", "dana@acme.com"]

POLICY = {
    "autonomy": {
        "compensate": "allow",
        "read": "allow",
        "none": "ask",
        "unknown": "ask",
        "approver": TEAM_LEAD,
    },
    "undoAuthority": TEAM_LEAD,
}


class ScenarioError(Exception):
    """A step of the story did not go as it must; the message is one line for the user."""


@dataclass(frozen=True)
class World:
    """Paths of one story's working directory."""

    root: Path
    kept: bool = True  # False when the folder is removed after the story: its paths are not printed

    @property
    def config(self) -> Path:
        return self.root / "recorder.toml"

    @property
    def mail(self) -> Path:
        return self.root / "mail"

    def log_hint(self, log: Path) -> str:
        """Where to read more: the log's path if it stays, else its last line (the folder goes)."""
        if self.kept:
            return f"see {log}"
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []
        return f"its log ends: {lines[-1].strip()}" if lines else "its log is empty"

    def key(self, person: str) -> Path:
        return self.root / f"{person.rsplit('/', 1)[-1]}.key"

    def db(self, server: str) -> Path:
        return self.root / f"{server}.db"


def build_world(root: Path, smtp_port: int, *, kept: bool = True) -> World:
    """Write keys, directory, policy and the Recorder's configuration into ``root``."""
    world = World(root, kept)
    people = []
    for person, name, roles in ((DANA, "Dana", []), (LEE, "Lee", [TEAM_LEAD])):
        key = SigningKey.generate()
        key.save(world.key(person))
        people.append({"id": person, "name": name, "roles": roles, "publicKey": b64url(key.public.raw())})
    (root / "directory.json").write_text(json.dumps({"people": people}, indent=2) + "\n")
    (root / "policy.json").write_text(json.dumps(POLICY, indent=2) + "\n")
    smtp = ["--smtp-host", "127.0.0.1", "--smtp-port", str(smtp_port)]
    servers = {
        "crm": ["hatp_journal.servers.crm.cli", "serve", "--db", str(world.db("crm"))],
        "calendar": [
            "hatp_journal.servers.calendar",
            "serve",
            "--db",
            str(world.db("calendar")),
            "--organizer",
            SENDER,
            *smtp,
        ],
        "email": [
            "hatp_journal.servers.email.cli",
            "serve",
            "--db",
            str(world.db("email")),
            "--from",
            SENDER,
            *smtp,
        ],
    }
    lines = [
        "[recorder]",
        'store = "recorder.db"',
        'key = "recorder.key"',
        'policy = "policy.json"',
        'directory = "directory.json"',
        f'agent = "{AGENT}"',
        f'principal = "{DANA}"',
    ]
    for name, arguments in servers.items():
        lines += [
            "",
            f"[servers.{name}]",
            f"command = {json.dumps(sys.executable)}",
            f"args = {json.dumps(['-m', *arguments])}",
            # The servers' start-up lines are for operators, not the story: only warnings show.
            'env = { FASTMCP_LOG_LEVEL = "WARNING" }',
        ]
    world.config.write_text("\n".join(lines) + "\n")
    return world


class MailSinkProcess:
    """``hatp-mailsink serve`` as a child process; ``port`` is read from its first line."""

    def __init__(self, directory: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hatp_journal.servers.mailsink", "serve", "--dir", str(directory)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()  # "listening on 127.0.0.1:PORT"
        if not line.startswith("listening on "):
            self.stop()
            raise ScenarioError(f"the mail sink did not start ({line or 'no output'})")
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def command(*arguments: str, module: str = "hatp_journal.recorder.cli", ok: tuple[int, ...] = (0,)) -> str:
    """Run one of the project's commands as a process; its output, or ScenarioError naming it."""
    done = subprocess.run(
        [sys.executable, "-m", module, *arguments], capture_output=True, text=True, check=False
    )
    if done.returncode not in ok:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[
            -1
        ]
        verb = next((a for a in arguments if not a.startswith("-") and "/" not in a and "." not in a), module)
        raise ScenarioError(f"{verb} failed: {said}")
    return done.stdout
