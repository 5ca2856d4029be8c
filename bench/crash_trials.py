"""Undo trials with ``kill -9`` of the Recorder, of a tool server, or both (issue 13).

Each trial is one agent run through the Recorder against the demo calendar (which mails through
a real SMTP sink) and the demo CRM, both served over streamable HTTP as their own processes:

    1 calendar_create_event  A, for buyer@globex.com and lee@acme.com
    2 crm_update_deal        one deal to another stage
    3 calendar_update_event  A gets a new summary
    4 calendar_create_event  B, for buyer@globex.com
    5 crm_update_deal        another deal

Then Dana plans the undo of the whole run and Lee approves it with ``hatp-recorder approve``,
which runs it. While it runs, the harness kills (SIGKILL) the Recorder's process, a tool server,
both, or the calendar's outbox courier (the process that mails its notices), at random points:
once the record holds a random number of undo entries, after a random
delay of up to 40 ms. Now and then Eve edits one of the run's resources between kills. A killed
tool server is started again, as a supervisor would; a killed undo is resumed with
``hatp-recorder undo REF``, as docs/recorder.md says, and a last ``undo REF`` finishes the trial.

Witnesses, none of them the Recorder's own account:

- the mail sink's Maildir, read with the standard library's ``mailbox`` and ``icalendar``: every
  iTIP message by (method, UID, SEQUENCE, recipient) — a key seen twice is a notice mailed twice
  (counted on a line of its own in a trial where the courier was killed: the courier's window
  between the SMTP server's 250 and its mark, where the copy keeps its Message-ID),
  two different CANCEL sequences for one event are a compensation applied twice, and an expected
  notice that never arrives is lost;
- the CRM's SQLite file: a deal's version counts its writes, so a restore applied twice shows as
  one version too many;
- the stores after the trial: Eve's values must still be there (else overwritten), a step may
  end ``conflicted`` only on a resource Eve edited (else a false conflict), and the last
  Reversal Record must leave no step failed or waiting (else the undo is stuck).

Commands and servers run as child processes of a forkserver that has imported the project once,
so a start costs milliseconds and the trials test crashes rather than import time. The mail sink
(``hatp-mailsink serve``) is one of them, a process of its own as a real SMTP server is. It offers
CHECKPOINT (RFC 1845), unless ``--no-checkpoint``: the courier names each notice's transaction
(TRANSID), and a restart of one whose message the sink stored is answered with the whole message's
offset, so no second copy is stored. At the end the sink's own view is printed too: the restarts
it recognised (each a copy it did not store), every Message-ID a recipient got twice, and how many
of those copies came with the courier's envelope identifier (ENVID), which tells a resend by its
envelope.

Run: ``.venv/bin/python bench/crash_trials.py [--trials 200] [--seed N] [--no-checkpoint]``
(``make bench-crash``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import mailbox
import multiprocessing
import os
import random
import socket
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import icalendar

PRELOAD = [
    "hatp_journal.recorder.cli",
    "hatp_journal.recorder.undo",
    "hatp_journal.servers.calendar.cli",
    "hatp_journal.servers.calendar.server",
    "hatp_journal.servers.crm.cli",
    "hatp_journal.servers.crm.server",
    "hatp_journal.servers.mailsink.cli",
    "hatp_journal.servers.mailsink._server",
    "fastmcp",
]
DANA = "human://acme.com/dana"
LEE = "human://acme.com/lee"
LEAD = "human://acme.com/role/team-lead"
EVE = "eve@acme.com"
ORGANIZER = "sales-bot@acme.com"
DEALS = ("D-881", "D-882", "D-883")
STAGES = ("Prospecting", "Qualification", "Proposal", "Negotiation", "Won", "Lost")
UNDO_KINDS = ("decision", "undo-intent", "undo-outcome")
SETTLED = ("reversed", "conflicted", "skipped", "notReversible")
MAIL_WAIT_SECONDS = 60.0
"""How long the harness waits for the notices a finished undo still owes (an outbox may send
them after a restart); a notice missing after that is counted lost."""


# -- child processes ----------------------------------------------------------------------------


def _run_main(module: str, argv: list[str], log: str) -> None:
    """In a forked child: run ``module.main(argv)`` with stdout and stderr going to ``log``."""
    import importlib

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), line_buffering=True)
    code = importlib.import_module(module).main(argv)
    sys.stdout.flush()
    os._exit(code if isinstance(code, int) else 0)


@dataclass
class Child:
    """One forkserver child running a project command."""

    process: BaseProcess

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.pid is not None and self.process.is_alive():
            os.kill(self.process.pid, 9)
        self.process.join()

    def wait(self) -> int | None:
        self.process.join()
        return self.process.exitcode


class Launcher:
    """Starts project commands as children of one forkserver that imported them already."""

    def __init__(self, root: Path) -> None:
        self.context: ForkServerContext = multiprocessing.get_context("forkserver")  # type: ignore[assignment]
        self.context.set_forkserver_preload(PRELOAD)
        self.log = str(root / "children.log")

    def start(self, module: str, argv: list[str]) -> Child:
        process = self.context.Process(target=_run_main, args=(module, argv, self.log), daemon=False)
        process.start()
        return Child(process)


@dataclass
class ToolServer:
    """A demo server over streamable HTTP on a fixed port, restarted after a kill."""

    name: str
    module: str
    argv: list[str]
    port: int
    launcher: Launcher
    child: Child | None = None
    kills: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        argv = [*self.argv, "--transport", "http", "--port", str(self.port)]
        self.child = self.launcher.start(self.module, argv)
        while not _accepts(self.port):
            if not self.child.alive():
                raise SystemExit(f"{self.name} did not start; see {self.launcher.log}")
            time.sleep(0.01)

    def kill(self) -> None:
        assert self.child is not None
        self.child.kill()
        self.kills += 1

    def ensure_running(self) -> None:
        if self.child is None or not self.child.alive():
            self.start()


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the organisation ---------------------------------------------------------------------------


@dataclass
class World:
    root: Path
    launcher: Launcher
    sink_port: int
    servers: dict[str, ToolServer] = field(default_factory=dict)

    @property
    def config(self) -> str:
        return str(self.root / "recorder.toml")

    @property
    def mail(self) -> Path:
        return self.root / "mail"

    def key(self, person: str) -> str:
        return str(self.root / f"{person.rsplit('/', 1)[-1]}.key")

    def recorder(self, *argv: str) -> Child:
        return self.launcher.start("hatp_journal.recorder.cli.command_line", ["--config", self.config, *argv])

    def cli(self, *argv: str) -> tuple[int, str]:
        """``hatp-recorder`` in this process (for the quiet steps: planning); (code, stdout)."""
        from hatp_journal.recorder.cli.command_line import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["--config", self.config, *argv])
        return code, out.getvalue()


def build_world(root: Path, launcher: Launcher, sink_port: int) -> World:
    from hatp_journal.toolkit.signing import SigningKey, b64url

    world = World(root, launcher, sink_port)
    people = []
    for person, roles in ((DANA, []), (LEE, [LEAD])):
        key = SigningKey.generate()
        key.save(Path(world.key(person)))
        name = person.rsplit("/", 1)[-1].title()
        people.append({"id": person, "name": name, "roles": roles, "publicKey": b64url(key.public.raw())})
    (root / "directory.json").write_text(json.dumps({"people": people}))
    policy = {
        "autonomy": dict.fromkeys(("compensate", "read", "none", "unknown"), "allow"),
        "undoAuthority": LEAD,
    }
    policy["autonomy"]["approver"] = LEAD
    (root / "policy.json").write_text(json.dumps(policy))
    smtp = ["--smtp-host", "127.0.0.1", "--smtp-port", str(sink_port)]
    world.servers = {
        "calendar": ToolServer(
            "calendar",
            "hatp_journal.servers.calendar.cli",
            ["serve", "--db", str(root / "calendar.db"), "--organizer", ORGANIZER, *smtp],
            _free_port(),
            launcher,
        ),
        "crm": ToolServer(
            "crm",
            "hatp_journal.servers.crm.cli",
            ["serve", "--db", str(root / "crm.db")],
            _free_port(),
            launcher,
        ),
    }
    lines = [
        "[recorder]",
        'store = "recorder.db"',
        'key = "recorder.key"',
        'policy = "policy.json"',
        'directory = "directory.json"',
        'agent = "sales-bot"',
        f'principal = "{DANA}"',
    ]
    for name, server in world.servers.items():
        lines += ["", f"[servers.{name}]", f'url = "{server.url}"', "timeout_seconds = 20"]
    (root / "recorder.toml").write_text("\n".join(lines) + "\n")
    for server in world.servers.values():
        server.start()
    return world


# -- one trial ----------------------------------------------------------------------------------


@dataclass
class Trial:
    """What one trial did, and what the witnesses say about it."""

    number: int
    run: str = ""
    kills: list[str] = field(default_factory=list)
    edited: dict[str, str] = field(default_factory=dict)
    """Resource URI -> the value Eve left (summary or stage)."""
    eve_writes: Counter[str] = field(default_factory=Counter)
    notices: int = 0
    replanned: bool = False
    """Undo notices the sink had to receive (each once)."""
    statuses: Counter[str] = field(default_factory=Counter)
    applied_twice: list[str] = field(default_factory=list)
    mailed_twice: list[str] = field(default_factory=list)
    courier_twice: list[str] = field(default_factory=list)
    """Notices mailed twice in a trial where the courier was killed (its RFC 1047 window)."""
    lost: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    false_conflicts: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [
            *(f"applied twice: {x}" for x in self.applied_twice),
            *(f"mailed twice: {x}" for x in self.mailed_twice),
            *(f"mailed twice after a courier kill: {x}" for x in self.courier_twice),
            *(f"lost: {x}" for x in self.lost),
            *(f"overwritten: {x}" for x in self.overwritten),
            *(f"false conflict: {x}" for x in self.false_conflicts),
            *(f"stuck: {x}" for x in self.stuck),
        ]


def agent_run(world: World, number: int, rng: random.Random) -> str:
    """The agent's five calls through an in-process Recorder; returns the run id and the calls."""
    import anyio

    day = datetime(2027, 1, 4, 9, tzinfo=UTC) + timedelta(days=number)
    x, y = rng.sample(DEALS, 2)
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "calendar_create_event",
            _event(f"Trial {number} kickoff", day, ["buyer@globex.com", "lee@acme.com"]),
        ),
        ("crm_update_deal", {"deal_id": x, "stage": _other_stage(world, x, rng)}),
        ("calendar_update_event", {"summary": f"Trial {number} kickoff (moved)"}),
        (
            "calendar_create_event",
            _event(f"Trial {number} review", day + timedelta(hours=3), ["buyer@globex.com"]),
        ),
        ("crm_update_deal", {"deal_id": y, "stage": _other_stage(world, y, rng)}),
    ]
    return anyio.run(_agent, world, calls)


async def _agent(world: World, calls: list[tuple[str, dict[str, Any]]]) -> str:
    from contextlib import AsyncExitStack

    from fastmcp import Client

    from hatp_journal.recorder.config import load_config
    from hatp_journal.recorder.gateway.core import Recorder
    from hatp_journal.recorder.policy import load_policy
    from hatp_journal.recorder.record import RunStore
    from hatp_journal.toolkit import SigningKey

    config = load_config(Path(world.config))
    store = RunStore(world.root / "recorder.db", SigningKey.load_or_create(world.root / "recorder.key"))
    recorder = Recorder(config, store=store, policy=load_policy(world.root / "policy.json"))
    uid = ""
    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            async with Client(mcp, timeout=60) as client:
                for tool, arguments in calls:
                    if tool == "calendar_update_event":
                        arguments["uid"] = uid
                    result = await client.call_tool_mcp(tool, arguments)
                    if result.is_error:
                        raise SystemExit(f"{tool} failed: {result.content}")
                    if tool == "calendar_create_event" and not uid:
                        uid = str((result.structured_content or {})["uid"])
    finally:
        recorder.close()
        store.dispose()
    assert recorder.run_id is not None
    return recorder.run_id


def _event(summary: str, start: datetime, attendees: list[str]) -> dict[str, Any]:
    end = start + timedelta(hours=1)
    return {"summary": summary, "start": start.isoformat(), "end": end.isoformat(), "attendees": attendees}


def _other_stage(world: World, deal: str, rng: random.Random) -> str:
    stage, _ = _deal(world, deal)
    return rng.choice([s for s in STAGES if s != stage])


def _deal(world: World, deal: str) -> tuple[str, int]:
    """A deal's stage and version number, read from the CRM's SQLite file."""
    with contextlib.closing(sqlite3.connect(world.root / "crm.db", timeout=30)) as db:
        stage, version = db.execute("SELECT stage, version FROM crm_deal WHERE id = ?", (deal,)).fetchone()
    return str(stage), int(str(version).lstrip("v"))


def _event_summary(world: World, uid: str) -> str:
    with contextlib.closing(sqlite3.connect(world.root / "calendar.db", timeout=30)) as db:
        [ics] = db.execute("SELECT ics FROM cal_event WHERE uid = ?", (uid,)).fetchone()
    return str(icalendar.Calendar.from_ical(ics).walk("VEVENT")[0]["SUMMARY"])


def step_in_flight(world: World, run: str) -> str | None:
    """The step whose compensation is under way: the newest undo entry, if it is an intent."""
    marks = ",".join("?" * len(UNDO_KINDS))
    with contextlib.closing(sqlite3.connect(world.root / "recorder.db", timeout=30)) as db:
        query = (
            f"SELECT kind, data FROM rec_entry WHERE run = ? AND kind IN ({marks}) ORDER BY seq DESC LIMIT 1"
        )
        row = db.execute(query, (run, *UNDO_KINDS)).fetchone()
    if row is None or row[0] != "undo-intent":
        return None
    return str(json.loads(row[1])["body"]["step"])


def _reversed(world: World, run: str) -> bool:
    with contextlib.closing(sqlite3.connect(world.root / "recorder.db", timeout=30)) as db:
        query = "SELECT count(*) FROM rec_entry WHERE run = ? AND kind = 'reversal'"
        return int(db.execute(query, (run,)).fetchone()[0]) > 0


def progress(world: World, run: str) -> int:
    """Undo entries of ``run`` in the record so far (read from the SQLite file directly)."""
    marks = ",".join("?" * len(UNDO_KINDS))
    with contextlib.closing(sqlite3.connect(world.root / "recorder.db", timeout=30)) as db:
        query = f"SELECT count(*) FROM rec_entry WHERE run = ? AND kind IN ({marks})"
        return int(db.execute(query, (run, *UNDO_KINDS)).fetchone()[0])


def calibrate(world: World, number: int, rng: random.Random) -> dict[str, float]:
    """One undo with no kill, timing each compensation from its intent to its outcome (by
    polling the record), so that kills aimed at a server land inside a compensation."""
    run = agent_run(world, number, rng)
    servers = {entry: tool.split("_", 1)[0] for entry, (tool, _) in _resources(world, run).items()}
    code, out = world.cli("plan", run, "--from", "1", "--by", DANA, "--json")
    if code != 0:
        raise SystemExit(f"calibration: plan failed ({code}): {out}")
    process = world.recorder("approve", json.loads(out)["ref"], "--as", LEE, "--key", world.key(LEE))
    times: dict[str, list[float]] = {}
    current: tuple[str, float] | None = None
    while process.alive():
        step = step_in_flight(world, run)
        now = time.monotonic()
        if step is not None and (current is None or current[0] != step):
            current = (step, now)
        elif step is None and current is not None:
            times.setdefault(servers[current[0]], []).append(now - current[1])
            current = None
        time.sleep(0.001)
    process.wait()
    return {server: sorted(spans)[len(spans) // 2] for server, spans in times.items()}


def play(world: World, number: int, rng: random.Random, spans: dict[str, float]) -> Trial:
    trial = Trial(number)
    run = agent_run(world, number, rng)
    trial.run = run
    deals_before = {deal: _deal(world, deal)[1] for deal in DEALS}
    resources = _resources(world, run)
    uids = {r.rsplit("/", 1)[-1] for _, r in resources.values() if r.startswith("calendar://")}
    undo_from = _undo_sequence_floor(world, uids)
    code, out = world.cli("plan", run, "--from", "1", "--by", DANA, "--json")
    if code != 0:
        raise SystemExit(f"trial {number}: plan failed ({code}): {out}")
    ref = json.loads(out)["ref"]
    process = world.recorder("approve", ref, "--as", LEE, "--key", world.key(LEE))
    for kill in range(rng.randint(1, 4)):
        what = rng.choice(("recorder", "server", "both", "courier"))
        target = max(1, progress(world, run) + rng.randint(0, 5))
        while process.alive() and progress(world, run) < target:
            time.sleep(0.002)
        if what == "courier":
            # Aim at the calendar's mail: wait for the intent of a calendar step.
            while process.alive() and not (
                (step := step_in_flight(world, run)) is not None
                and step in resources
                and resources[step][0].startswith("calendar_")
            ):
                time.sleep(0.002)
        elif what != "recorder":
            # Aim at the compensation in flight: wait for an intent, kill that step's server.
            while process.alive() and (step := step_in_flight(world, run)) is None:
                time.sleep(0.002)
        if not process.alive():
            break
        aim = spans.get(resources[step][0].split("_", 1)[0], 0.05) if what != "recorder" else 0.05
        time.sleep(rng.uniform(0, aim))
        if what in ("recorder", "both"):
            process.kill()
        if what in ("server", "both"):
            server = world.servers[resources[step][0].split("_", 1)[0]]
            server.kill()
            server.start()  # as a supervisor would
        if what == "courier":
            # Nobody restarts it: the calendar server starts another when notices wait.
            trial.kills.append("courier:calendar" if _kill_courier(world) else "courier:idle")
        else:
            trial.kills.append(what if what == "recorder" else f"{what}:{server.name}")
        if rng.random() < 0.3:
            _eve_edits(world, resources, trial, rng, kill)
        if not process.alive():
            process = world.recorder("undo", ref)
    process.wait()
    world.recorder("undo", ref).wait()  # idempotent: resumes, or reports the finished record
    if not _reversed(world, run):
        # An edit before the first compensation makes the approval stale (PLAN_STALE): as the
        # docs say, Dana plans again and Lee approves the new plan.
        trial.replanned = True
        code, out = world.cli("plan", run, "--from", "1", "--by", DANA, "--json")
        if code == 0:
            world.recorder("approve", json.loads(out)["ref"], "--as", LEE, "--key", world.key(LEE)).wait()
    _judge(world, trial, resources, deals_before, undo_from)
    return trial


def _courier(world: World) -> int | None:
    """The pid of the calendar's live courier, from the lease in its store (None if it has none)."""
    with contextlib.closing(sqlite3.connect(world.root / "calendar.db", timeout=30)) as db:
        try:
            row = db.execute("SELECT pid FROM outbox_courier WHERE name = 'courier'").fetchone()
        except sqlite3.OperationalError:  # no table yet
            return None
    return int(row[0]) if row is not None else None


def _kill_courier(world: World) -> bool:
    """SIGKILL the calendar's courier; False if none was running."""
    pid = _courier(world)
    if pid is None:
        return False
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        return False
    return True


def _resources(world: World, run: str) -> dict[str, tuple[str, str]]:
    """Entry id -> (tool, resource) of each call of ``run``."""
    from hatp_journal.recorder.record import RunStore
    from hatp_journal.toolkit import SigningKey

    store = RunStore(world.root / "recorder.db", SigningKey.load_or_create(world.root / "recorder.key"))
    try:
        return {
            e.id: (f"{e.body['server']}_{e.body['tool']}", str(e.body["journal"]["effect"]["resource"]))
            for e in store.entries(run)
            if e.kind == "call"
        }
    finally:
        store.dispose()


def _eve_edits(
    world: World, resources: dict[str, tuple[str, str]], trial: Trial, rng: random.Random, kill: int
) -> None:
    """Eve changes one of the run's resources outside the run, through the servers' own stores."""
    from hatp_journal.servers.calendar.itip import InvalidEventError
    from hatp_journal.servers.calendar.store import edit_event, uid_of
    from hatp_journal.servers.crm.store import edit_deal
    from hatp_journal.toolkit import create_store_engine
    from hatp_journal.toolkit.wire import utc_now

    resource = rng.choice(sorted({resource for _, resource in resources.values()}))
    if resource.startswith("calendar://"):
        engine = create_store_engine(world.root / "calendar.db")
        value = f"Moved by Eve ({trial.number}.{kill})"
        try:
            edit_event(engine, uid_of(resource), by=EVE, now=utc_now(), summary=value)
        except InvalidEventError:  # cancelled by the undo already: Eve can't edit it, nothing to protect
            return
        finally:
            engine.dispose()
    else:
        deal = resource.rsplit("/", 1)[-1]
        value = rng.choice([s for s in STAGES if s != _deal(world, deal)[0]])
        engine = create_store_engine(world.root / "crm.db")
        try:
            edit_deal(engine, deal, stage=value, by=EVE)
        finally:
            engine.dispose()
    trial.edited[resource] = value
    trial.eve_writes[resource] += 1


def _judge(
    world: World,
    trial: Trial,
    resources: dict[str, tuple[str, str]],
    deals_before: dict[str, int],
    undo_from: dict[str, int],
) -> None:
    from hatp_journal.recorder.record import RunStore
    from hatp_journal.toolkit import SigningKey

    store = RunStore(world.root / "recorder.db", SigningKey.load_or_create(world.root / "recorder.key"))
    try:
        entries = store.entries(trial.run)
    finally:
        store.dispose()
    reversals = [e for e in entries if e.kind == "reversal"]
    if not reversals:
        trial.stuck.append("no Reversal Record")
        return
    steps = {line["entry"]: line for line in reversals[-1].body["steps"]}
    trial.statuses.update(line["status"] for line in steps.values())
    for entry, line in steps.items():
        if line["status"] not in SETTLED or line.get("retry"):
            trial.stuck.append(f"{entry} {line['status']}: {line.get('reason', '')}")
        resource = resources[entry][1]
        if line["status"] == "conflicted" and resource not in trial.edited:
            trial.false_conflicts.append(f"{entry} {resource}: {line.get('reason', '')}")
    # Eve's values stay.
    for resource, value in trial.edited.items():
        if resource.startswith("calendar://"):
            now = _event_summary(world, resource.rsplit("/", 1)[-1])
        else:
            now = _deal(world, resource.rsplit("/", 1)[-1])[0]
        if now != value:
            trial.overwritten.append(f"{resource}: Eve left {value!r}, now {now!r}")
    # CRM: a deal's version counts its writes: the agent's, Eve's, and at most one restore.
    for entry, (tool, resource) in resources.items():
        if tool != "crm_update_deal":
            continue
        deal = resource.rsplit("/", 1)[-1]
        expected = (
            deals_before[deal] + 1 + trial.eve_writes[resource] + (steps[entry]["status"] == "reversed")
        )
        actual = _deal(world, deal)[1]
        if actual > expected:
            trial.applied_twice.append(
                f"{deal}: {actual - expected} write(s) more than the run, Eve and one undo"
            )
    _judge_mail(world, trial, resources, steps, undo_from)


def _judge_mail(
    world: World,
    trial: Trial,
    resources: dict[str, tuple[str, str]],
    steps: dict[str, Any],
    undo_from: dict[str, int],
) -> None:
    """The sink's view: every notice the undo owes arrived exactly once."""
    uids = set(undo_from)
    expected: set[tuple[str, str, str]] = set()
    for entry, line in steps.items():
        tool, resource = resources[entry]
        if not tool.startswith("calendar_") or line["status"] != "reversed":
            continue
        uid = resource.rsplit("/", 1)[-1]
        kind = "CANCEL" if tool == "calendar_create_event" else "REQUEST"
        for address in _attendees(world, uid):
            expected.add((kind, uid, address))
    deadline = time.monotonic() + MAIL_WAIT_SECONDS
    while True:
        seen = _itip(world.mail, uids)
        undone = [key for key in seen if key[2] >= undo_from[key[1]]]
        missing = {x for x in expected if not any((k[0], k[1], k[3]) == x for k in undone)}
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    trial.notices = len(expected)
    trial.lost += [f"{kind} {uid} to {address}" for kind, uid, address in sorted(missing)]
    twice = [f"{m} {u} SEQUENCE {s} to {a} x{n}" for (m, u, s, a), n in seen.items() if n > 1]
    if any(kill == "courier:calendar" for kill in trial.kills):
        trial.courier_twice += twice
    else:
        trial.mailed_twice += twice
    for uid in uids:
        cancels = {s for (m, u, s, _), _n in seen.items() if m == "CANCEL" and u == uid}
        if len(cancels) > 1:
            trial.applied_twice.append(
                f"event {uid} cancelled {len(cancels)} times (SEQUENCE {sorted(cancels)})"
            )


def _attendees(world: World, uid: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(world.root / "calendar.db", timeout=30)) as db:
        [ics] = db.execute("SELECT ics FROM cal_event WHERE uid = ?", (uid,)).fetchone()
    event = icalendar.Calendar.from_ical(ics).walk("VEVENT")[0]
    found = event.get("ATTENDEE", [])
    return [str(a).removeprefix("mailto:").lower() for a in (found if isinstance(found, list) else [found])]


def _undo_sequence_floor(world: World, uids: set[str]) -> dict[str, int]:
    """Before the undo: the first SEQUENCE an undo notice of each event can carry (one above the
    agent's last message; Eve's edits only raise it further)."""
    floor = dict.fromkeys(uids, 0)
    for _method, uid, sequence, _ in _itip(world.mail, uids):
        floor[uid] = max(floor[uid], sequence + 1)
    return floor


def _itip(maildir: Path, uids: set[str]) -> Counter[tuple[str, str, int, str]]:
    """(method, UID, SEQUENCE, recipient) of every iTIP message in the sink for these events."""
    seen: Counter[tuple[str, str, int, str]] = Counter()
    for message in mailbox.Maildir(maildir, create=False):
        for part in message.walk():
            if part.get_content_type() != "text/calendar":
                continue
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            calendar = icalendar.Calendar.from_ical(payload)
            event = calendar.walk("VEVENT")[0]
            uid = str(event["UID"])
            if uid in uids:
                recipient = _recipient(message)
                seen[(str(calendar["METHOD"]), uid, int(event.get("SEQUENCE", 0)), recipient)] += 1
    return seen


def _recipient(message: Message) -> str:
    from email.utils import getaddresses

    return getaddresses([str(message["To"])])[0][1].lower()


# -- main ---------------------------------------------------------------------------------------


def _restarts_recognised(log: Path) -> int:
    """How many restarts the sink logged answering with the stored message (``hatp-mailsink serve``)."""
    if not log.exists():
        return 0
    lines = log.read_text(errors="replace").splitlines()
    return sum(": stored already, no second copy" in line for line in lines)


def _spans(spans: dict[str, float]) -> str:
    return ", ".join(f"{server} {seconds * 1000:.0f} ms" for server, seconds in sorted(spans.items()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    parser.add_argument("--keep", action="store_true", help="keep the working directory and print it")
    parser.add_argument(
        "--no-checkpoint",
        dest="checkpoint",
        action="store_false",
        help="the sink offers no CHECKPOINT, as most SMTP servers: a courier's restart is a second copy",
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="crash-trials-"))
    offers = "CHECKPOINT" if args.checkpoint else "no CHECKPOINT"
    print(
        f"crash trials: {args.trials} trials, seed {args.seed}, load {os.getloadavg()[0]:.1f}, the sink"
        f" offering {offers}, in {root}"
    )
    launcher = Launcher(root)
    totals: Counter[str] = Counter()
    kills: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    notices = 0
    replans = 0
    courier_trials = 0
    failures: list[str] = []
    started = time.monotonic()
    spans: dict[str, float] = {}
    # The sink is a process of its own, as a real SMTP server is: in this one its replies would
    # wait for the harness's polling (the GIL), which widens the courier's window.
    sink_port = _free_port()
    serve = ["serve", "--dir", str(root / "mail"), "--port", str(sink_port)]
    sink = launcher.start(
        "hatp_journal.servers.mailsink.cli", serve + ([] if args.checkpoint else ["--no-checkpoint"])
    )
    while not _accepts(sink_port):
        if not sink.alive():
            raise SystemExit(f"the mail sink did not start; see {launcher.log}")
        time.sleep(0.01)
    try:
        world = build_world(root, launcher, sink_port)
        try:
            for number in range(1, args.trials + 1):
                if number % 25 == 1:
                    spans = calibrate(world, args.trials + number, rng)
                    print(f"  compensation time (median, no kill): {_spans(spans)}", flush=True)
                trial = play(world, number, rng, spans)
                kills.update(k.split(":")[0] for k in trial.kills)
                statuses.update(trial.statuses)
                notices += trial.notices
                replans += trial.replanned
                for name in (
                    "applied_twice",
                    "mailed_twice",
                    "courier_twice",
                    "lost",
                    "overwritten",
                    "false_conflicts",
                    "stuck",
                ):
                    totals[name] += len(getattr(trial, name))
                courier_trials += any(kill == "courier:calendar" for kill in trial.kills)
                problems = trial.problems()
                failures += [f"trial {number} ({trial.run}, kills {trial.kills}): {p}" for p in problems]
                elapsed = time.monotonic() - started
                print(
                    f"  trial {number:>3}/{args.trials}  kills {','.join(trial.kills) or '-':<34}"
                    f" edits {len(trial.edited)}  notices {trial.notices}"
                    f"  {'replanned  ' if trial.replanned else ''}"
                    f"{'OK' if not problems else '; '.join(problems)}"
                    f"  [{elapsed:.0f} s]",
                    flush=True,
                )
        finally:
            for server in world.servers.values():
                if server.child is not None:
                    server.child.kill()
            _kill_courier(world)  # it would stop by itself once idle; don't leave it behind
    finally:
        sink.kill()
    print(f"\nkills: {dict(kills)}  load {os.getloadavg()[0]:.1f}  {time.monotonic() - started:.0f} s")
    print(f"steps: {dict(statuses)}  undo notices owed: {notices}  planned again after PLAN_STALE: {replans}")
    labels = {
        "applied_twice": "compensations applied twice",
        "mailed_twice": "notices mailed twice",
        "lost": "notices lost",
        "overwritten": "human edits overwritten",
        "false_conflicts": "false conflicts",
        "stuck": "stuck undos",
    }
    for name, label in labels.items():
        print(f"  {label:<30} {totals[name]}")
    print(
        f"  and, on their own line: notices mailed twice in the {courier_trials} trials where the calendar's"
        f" courier was killed: {totals['courier_twice']} (each a second copy with the same Message-ID)"
    )
    from hatp_journal.servers.mailsink import read_maildir, resent

    resends = resent(read_maildir(root / "mail"))
    with_envid = sum(len(set(r.envelope_ids)) == 1 and r.envelope_ids[0] is not None for r in resends)
    print(
        f"  the sink's own count (hatp-mailsink resent): {len(resends)} Message-IDs a recipient got more"
        f" than once, {with_envid} of them with one ENVID on every copy"
    )
    restarts = _restarts_recognised(Path(launcher.log))
    print(f"  restarts the sink recognised (CHECKPOINT; each a copy it did not store): {restarts}")
    for line in failures:
        print("  " + line)
    if args.keep:
        print(f"kept {root}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
