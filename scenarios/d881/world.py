"""The world the D-881 story plays in: Acme's people, policy, Recorder configuration and mail sink.

Everything is written into one working directory and every part runs as its own process, exactly
as an organisation would run it: ``hatp-mailsink``, the three demo servers (started by the
Recorder over stdio, each mailing through a courier process), ``hatp-recorder serve`` for the
agent, and ``hatp-recorder`` commands for the people. A test that is not about a kill may ask for
``in_process``: then the mail sink and the people's commands run inside the story's own process and
the servers deliver their mail themselves (``--courier inline``); the Recorder and the tool servers
stay processes of their own.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hatp_journal.toolkit.signing import SigningKey, b64url

if TYPE_CHECKING:
    from hatp_journal.servers.mailsink import MailSink

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
    in_process: bool = False  # the people's commands run in this process (see the module's docstring)

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

    def command(
        self,
        *arguments: str,
        module: str = "hatp_journal.recorder.cli.command_line",
        ok: tuple[int, ...] = (0,),
    ) -> str:
        """One of the project's commands, as a process or (``in_process``) in this one (:func:`command`)."""
        return command(*arguments, module=module, ok=ok, in_process=self.in_process)


def build_world(
    root: Path, smtp_port: int, *, kept: bool = True, in_process: bool = False, tracing: bool = False
) -> World:
    """Write keys, directory, policy and the Recorder's configuration into ``root`` (with ``tracing``:
    the Recorder's OpenTelemetry spans on, exported as the ``OTEL_*`` environment says)."""
    world = World(root, kept, in_process)
    people = []
    for person, name, roles in ((DANA, "Dana", []), (LEE, "Lee", [TEAM_LEAD])):
        key = SigningKey.generate()
        key.save(world.key(person))
        people.append({"id": person, "name": name, "roles": roles, "publicKey": b64url(key.public.raw())})
    (root / "directory.json").write_text(json.dumps({"people": people}, indent=2) + "\n")
    (root / "policy.json").write_text(json.dumps(POLICY, indent=2) + "\n")
    smtp = ["--smtp-host", "127.0.0.1", "--smtp-port", str(smtp_port)]
    if in_process:
        smtp += ["--courier", "inline"]
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
        *(["tracing = true"] if tracing else []),
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


def start_mail_sink(directory: Path, *, in_process: bool = False) -> MailSinkProcess | MailSink:
    """The story's mail sink: ``hatp-mailsink serve`` as a process, or (``in_process``) in this one."""
    if not in_process:
        return MailSinkProcess(directory)
    from hatp_journal.servers.mailsink import MailSink

    return MailSink(directory).start()


def command(
    *arguments: str,
    module: str = "hatp_journal.recorder.cli.command_line",
    ok: tuple[int, ...] = (0,),
    in_process: bool = False,
) -> str:
    """Run one of the project's commands as a process, or (``in_process``) its ``main`` in this
    process; its output, or ScenarioError naming it."""
    if in_process:
        status, out, err = _in_this_process(module, list(arguments))
    else:
        done = subprocess.run(
            [sys.executable, "-m", module, *arguments], capture_output=True, text=True, check=False
        )
        status, out, err = done.returncode, done.stdout, done.stderr
    if status not in ok:
        said = (err.strip() or out.strip() or f"exit status {status}").splitlines()[-1]
        verb = next((a for a in arguments if not a.startswith("-") and "/" not in a and "." not in a), module)
        raise ScenarioError(f"{verb} failed: {said}")
    return out


def _in_this_process(module: str, argv: list[str]) -> tuple[int, str, str]:
    """``module``'s ``main(argv)``: (exit status, stdout, stderr). It runs in a thread of its own
    (the story's event loop runs in this one and a command may start its own) while this one waits.
    Its output goes to files, not buffers: the tool servers a command starts write to its stderr."""
    main = importlib.import_module(module).main

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return int(main(argv))
            except SystemExit as exit_:  # argparse refusing the arguments
                return exit_.code if isinstance(exit_.code, int) else 2

    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8") as err,
    ):
        with ThreadPoolExecutor(max_workers=1) as thread:
            status = thread.submit(run).result()
        out.seek(0)
        err.seek(0)
        return status, out.read(), err.read()
