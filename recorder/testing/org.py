"""An organisation for tests of undo: a Recorder in front of tool-server processes, and its people.

``make_org(root, {"crm": [python, "-m", …]})`` writes a working folder (directory, policy,
``recorder.toml``, everyone's keys) for Dana (the principal), Lee (the team lead, who may approve)
and Eve (a colleague). The agent is an MCP client of an in-process Recorder that reaches the servers
as the config says (stdio); people act through ``hatp-recorder``'s ``main``, as on a terminal.
See docs/recorder.md ("Testing an organisation's undo").
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import anyio
from fastmcp import Client

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import Entry, RunStore, VerifyReport, verify_record
from hatp_journal.recorder.record.entry_bodies import ReversalBody, read_own
from hatp_journal.recorder.undo import Step, execute_plan, find_plan
from hatp_journal.recorder.undo.actions import authority_now
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit.signing import SigningKey, b64url

LEAD = "human://acme.com/role/team-lead"
DANA = "human://acme.com/dana"
LEE = "human://acme.com/lee"
EVE = "human://acme.com/eve"
POLICY: dict[str, Any] = {
    "autonomy": {
        "compensate": "allow",
        "read": "allow",
        "none": "allow",
        "unknown": "allow",
        "approver": LEAD,
    },
    "undoAuthority": LEAD,
}
"""Every call runs unasked; the team lead (Lee) decides asks and undo."""


class Captured(Protocol):
    out: str
    err: str


class Capture(Protocol):
    """What catches a command's output: pytest's ``capfd`` or ``capsys``, or :class:`Printed`."""

    def readouterr(self) -> Captured: ...


@dataclass
class _Told:
    out: str
    err: str


class Printed:
    """A :class:`Capture` of what a command prints (no pytest needed), and of what a server it starts
    writes to stderr: the files it prints to are real ones, since a server started over stdio takes
    the Recorder's ``sys.stderr`` as its own."""

    def __init__(self) -> None:
        self._told = _Told("", "")

    def readouterr(self) -> _Told:
        told, self._told = self._told, _Told("", "")
        return told

    def run(self, command: Callable[[], int]) -> int:
        with _text_file() as out, _text_file() as err:
            try:
                with redirect_stdout(out), redirect_stderr(err):
                    return command()
            finally:
                self._told = _Told(_read(out), _read(err))


def _text_file() -> IO[str]:
    return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")


def _read(file: IO[str]) -> str:
    file.flush()
    file.seek(0)
    return file.read()


@dataclass
class Org:
    """The working folder of one organisation, and what people do in it."""

    root: Path
    capfd: Capture
    store_url: str | None = None  # the Recorder's store; None: recorder.db in root

    @property
    def config(self) -> Path:
        return self.root / "recorder.toml"

    def db(self, server: str = "chain") -> Path:
        return self.root / f"{server}.db"

    def key(self, person: str) -> str:
        return str(self.root / f"{person.rsplit('/', 1)[-1]}.key")

    def store(self) -> RunStore:
        where = self.store_url or self.root / "recorder.db"
        return RunStore(where, SigningKey.load_or_create(self.root / "recorder.key"))

    def entries(self, run: str) -> list[Entry]:
        store = self.store()
        try:
            return store.entries(run)
        finally:
            store.dispose()

    def agent(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        *,
        agent: str = "sales-bot",
        told: list[Any] | None = None,
        between: Callable[[int], None] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """One agent session through the Recorder; returns its run id.

        Every call must succeed, unless ``told`` is given: then each result is appended to it.
        ``between(n)`` runs after the n-th call (to change the world while the run goes on).
        ``meta`` is sent with every call (a run key, say: ``{"hatp/runKey": key}``).
        """
        return anyio.run(self._agent, calls, agent, told, between, meta)

    async def _agent(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        agent: str,
        told: list[Any] | None,
        between: Callable[[int], None] | None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        config = load_config(self.config)
        config.recorder.agent = agent
        store = self.store()
        recorder = Recorder(
            config,
            store=store,
            policy=load_policy(Path(config.recorder.policy), directory=config.recorder.directory),
        )
        keyed: str | None = None
        try:
            async with AsyncExitStack() as stack:
                mcp = await recorder.start(stack)
                async with Client(mcp) as client:
                    for number, (tool, arguments) in enumerate(calls, 1):
                        result = await client.call_tool_mcp(tool, arguments, meta=meta)
                        ours = (result.meta or {}).get("hatp/recorder")
                        ran = ours.get("run") if isinstance(ours, dict) else None
                        keyed = ran if isinstance(ran, str) else keyed
                        if told is None:
                            if result.is_error:
                                raise AssertionError(f"{tool} failed: {result.content}")
                        else:
                            told.append(result)
                        if between is not None:
                            between(number)
        finally:
            recorder.close()
            store.dispose()
        run = recorder.run_id or keyed  # calls that sent a run key went to that key's run
        if run is None:
            raise RuntimeError("the Recorder opened no run")
        return run

    def cli(self, *arguments: str) -> tuple[int, str, str]:
        """``hatp-recorder --config … ARGS``: (exit code, stdout, stderr)."""
        self.capfd.readouterr()
        command = ["--config", str(self.config), *arguments]
        capture = self.capfd
        code = capture.run(lambda: main(command)) if isinstance(capture, Printed) else main(command)
        told = self.capfd.readouterr()
        return code, told.out, told.err

    def plan(self, run: str, *which: str, by: str = DANA) -> tuple[str, dict[str, Any]]:
        """Plan an undo as JSON; returns (plan ref, plan)."""
        code, out, err = self.cli("plan", run, *which, "--by", by, "--json")
        if code != 0:
            raise AssertionError(f"plan failed ({code}): {err}")
        told = json.loads(out)
        return told["ref"], told["plan"]

    def approve(self, ref: str, *extra: str, person: str = LEE) -> tuple[int, str, str]:
        return self.cli("approve", ref, "--as", person, "--key", self.key(person), *extra)

    def verify(self, run: str) -> VerifyReport:
        """``run`` exported and verified offline against the Recorder's public key."""
        store = self.store()
        try:
            record = store.export(run).to_bytes()
            return verify_record(record, recorder_keys={store.public_key.kid: store.public_key})
        finally:
            store.dispose()

    def run_plan(self, ref: str, after_each: Callable[[Step], None]) -> list[str]:
        """Run (or resume) the approved plan ``ref`` in process, calling ``after_each`` after each
        compensation the server answered (to change the world while the undo runs); returns the
        steps sent. Errors of the undo (a halt) propagate."""
        config = load_config(self.config)
        store = self.store()
        sent: list[str] = []

        async def undo() -> None:
            async with AsyncExitStack() as stack:
                servers = UndoServers(config, store, stack)

                async def compensate(step: Step, request: dict[str, Any]) -> dict[str, Any]:
                    answer = await servers.compensate(step, request)
                    sent.append(step.id)
                    after_each(step)
                    return answer

                async def same_plan() -> Any:
                    return find_plan(store, ref).plan

                await execute_plan(
                    store, ref, compensate=compensate, replan=same_plan, authority=authority_now(config)
                )

        try:
            anyio.run(undo)
        finally:
            store.dispose()
        return sent

    def reversal(self, run: str) -> dict[str, str]:
        """The latest Reversal Record: each step's status by entry id."""
        [*_, reversal] = [e for e in self.entries(run) if e.kind == "reversal"]
        return {line.entry: line.status for line in read_own(ReversalBody, reversal).steps}


def make_org(
    root: Path,
    servers: Mapping[str, Sequence[str] | str],
    *,
    capture: Capture | None = None,
    store: str = "recorder.db",
) -> Org:
    """Write an organisation's folder in ``root``: each server started by its command line (program
    first) or, given as a string, reached at that streamable-HTTP URL; the people's keys, directory and
    policy (:data:`POLICY`); ``capture`` catches what the commands print (default: :class:`Printed`)."""
    people = []
    for person, roles in ((DANA, []), (LEE, [LEAD]), (EVE, [])):
        key = SigningKey.generate()
        key.save(root / f"{person.rsplit('/', 1)[-1]}.key")
        people.append(
            {
                "id": person,
                "name": person.rsplit("/", 1)[-1].title(),
                "roles": roles,
                "publicKey": b64url(key.public.raw()),
            }
        )
    (root / "directory.json").write_text(json.dumps({"people": people}))
    (root / "policy.json").write_text(json.dumps(POLICY))
    config = (
        "[recorder]\n"
        f"store = {json.dumps(store)}\n"
        'key = "recorder.key"\npolicy = "policy.json"\ndirectory = "directory.json"\n'
        f'agent = "sales-bot"\nprincipal = "{DANA}"\n'
    )
    for name, server in servers.items():
        if isinstance(server, str):
            config += f"\n[servers.{name}]\nurl = {json.dumps(server)}\n"
            continue
        program, *arguments = server
        config += f"\n[servers.{name}]\ncommand = {json.dumps(program)}\nargs = {json.dumps(arguments)}\n"
    (root / "recorder.toml").write_text(config)
    return Org(root, capture or Printed(), None if store == "recorder.db" else store)


def mailing(org: Org, smtp_port: int, review: dict[str, Any]) -> Org:
    """``org`` with everyone's address in the directory, ``review`` timings in the policy and
    ``[mail]`` pointing at an SMTP server: what reminders need."""
    people = json.loads((org.root / "directory.json").read_text())
    for person in people["people"]:
        person["email"] = person["id"].rsplit("/", 1)[-1] + "@acme.example"
    (org.root / "directory.json").write_text(json.dumps(people))
    (org.root / "policy.json").write_text(json.dumps({**POLICY, "review": review}))
    with org.config.open("a") as config:
        config.write(f"\n[mail]\nsmtp_port = {smtp_port}\n")
    return org
