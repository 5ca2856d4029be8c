"""Friday evening (protocol.md §12): the review is a countdown, with reminders, an escalation and lapses.

1. On a Friday evening the agent charges order O-1001 (undo window 1 day) and moves deal D-883 to
   Proposal (7 days), through ``hatp-recorder serve`` with the CRM behind it; the run closes.
2. The clock is moved forward for ``hatp-recorder tick --now …`` (the servers and the calls keep
   their real times; only the review's "now" moves): the review reaches Dana at once, with the
   reminder for the charge, whose window is shorter than the one-day lead time.
3. Nobody looks; four hours before the charge's window closes Lee (team lead) gets the escalation,
   and after it closes the record says the window lapsed after escalation. Ticking again sends
   nothing twice.
4. Dana gets the deal's reminder a day before its window closes, reads the review
   (``hatp-recorder review``), so nobody is escalated, and the window lapses quietly.
5. What happened, from the mail sink and the Run Record.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal._shared.clock import parse_wire_time, utc_now, wire_time
from hatp_journal.recorder.record import RunStore
from hatp_journal.scenarios.d881.world import (
    DANA,
    LEE,
    POLICY,
    ScenarioError,
    World,
    build_world,
    start_mail_sink,
)
from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.toolkit import SigningKey

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("crm_charge_order", {"order_id": "O-1001", "amount": "1200.00", "currency": "USD"}),
    ("crm_update_deal", {"deal_id": "D-883", "stage": "Proposal"}),
]
EMAILS = {DANA: "dana@acme.com", LEE: "lee@acme.com"}


@dataclass(frozen=True)
class Told:
    """What the story found, for whoever ran it (tests read it too)."""

    run: str
    mail: list[tuple[str, str]]
    notices: list[tuple[str, str, str]]
    repeated_tick: str


async def run(workdir: Path, out: TextIO | None = None, *, in_process: bool = False) -> Told:
    """Play the story in ``workdir`` (an empty directory), printing each phase to ``out`` (stdout);
    ``in_process`` runs the mail sink and the people's commands here (see :mod:`..d881.world`)."""
    workdir = workdir.resolve()  # the servers and commands run in it: a relative path would move
    if workdir.exists() and any(workdir.iterdir()):
        raise ScenarioError(
            f"{workdir} is not empty (an earlier run's stores and mail?): "
            "remove it or pass an empty --workdir"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    sink = start_mail_sink(workdir / "mail", in_process=in_process)
    try:
        world = build_world(workdir, sink.port, in_process=in_process)
        _adapt(world.root, sink.port)
        return await _play(world, out or sys.stdout)
    finally:
        sink.stop()


def _adapt(root: Path, smtp_port: int) -> None:
    """D-881's world, plus addresses, the review policy and the Recorder's mail settings."""
    directory = json.loads((root / "directory.json").read_text())
    for person in directory["people"]:
        person["email"] = EMAILS[person["id"]]
    (root / "directory.json").write_text(json.dumps(directory, indent=2) + "\n")
    policy = {**POLICY, "review": {"remindBeforeSeconds": 86_400, "escalateBeforeSeconds": 14_400}}
    (root / "policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    with (root / "recorder.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[mail]\nsmtp_port = {smtp_port}\nsender = "recorder@acme.com"\n')


async def _play(world: World, out: TextIO) -> Told:
    root = world.root

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    config = ["--config", str(root / "recorder.toml")]
    say(f"== 1. {when_played(utc_now())}: sales-bot's run for Dana, through the Recorder")
    run_id, windows = await _agent(root, config, say)
    charge, deal = windows

    def tick(at: str, why: str) -> str:
        said = world.command(*config, "tick", "--now", at)
        say(f"\n  tick --now {at}   ({why})")
        for line in said.splitlines() or ["(nothing due)"]:
            say(f"    {line}")
        return said

    say("\n== 2. The run closed; the clock moves on for `hatp-recorder tick`")
    tick(_shift(charge[1], minutes=-23 * 60), "an hour after the run")
    say("\n== 3. Nobody looks at the charge")
    tick(_shift(charge[1], minutes=-4 * 60 + 1), "four hours before the charge's window closes")
    tick(_shift(charge[1], minutes=1), "the charge's window has closed")
    repeated = tick(_shift(charge[1], minutes=1), "the same tick again, as after a restart")
    say("\n== 4. The deal's window: Dana is reminded, and looks")
    tick(_shift(deal[1], minutes=-24 * 60 + 1), "a day before the deal's window closes")
    looked_at = _shift(deal[1], minutes=-20 * 60)
    said = world.command(*config, "review", run_id, "--as", DANA, "--now", looked_at)
    say(f"\n  Dana reads the review at {looked_at}:")
    say("\n".join(f"    {line}" for line in said.splitlines()))
    tick(_shift(deal[1], minutes=-4 * 60 + 1), "four hours before: somebody has looked")
    tick(_shift(deal[1], minutes=1), "the deal's window has closed")

    say("\n== 5. What happened")
    delivered = read_maildir(root / "mail")
    mail = [(", ".join(m.envelope_to), m.subject) for m in delivered]
    say(f"  mail sink: {len(delivered)} messages")
    for to, subject in mail:
        say(f"    to {to:<15} {subject}")
    notices = _notices(root, run_id)
    say("  run record:")
    for kind, step, after in notices:
        say(f"    {kind:<10} {step:<4} {after}")
    return Told(run_id, mail, notices, repeated)


async def _agent(root: Path, config: list[str], say: Any) -> tuple[str, list[tuple[str, str]]]:
    """The scripted agent's two calls; returns the run and each call's (entry, undoBy)."""
    log = root / "recorder.log"
    # Not kept alive: the Recorder must end with the session, closing (and signing) the run.
    transport = StdioTransport(
        sys.executable,
        ["-m", "hatp_journal.recorder.cli.command_line", *config, "serve"],
        cwd=str(root),
        log_file=log,
        keep_alive=False,
    )
    run_id, windows = "", []
    async with AsyncExitStack() as stack:
        agent = await stack.enter_async_context(Client(transport, timeout=60))
        for number, (tool, arguments) in enumerate(CALLS, 1):
            result = await agent.call_tool_mcp(tool, arguments)
            if result.is_error:
                text = " ".join(getattr(part, "text", "") for part in result.content)
                raise ScenarioError(f"{tool} failed: {text.strip() or 'no message'} (see {log})")
            journal = (result.meta or {}).get("hatp/journal") or {}
            recorder = (result.meta or {}).get("hatp/recorder") or {}
            undo_by = str((journal.get("undo") or {}).get("undoBy"))
            summary = (journal.get("effect") or {}).get("summary", "")
            say(f"  step {number}  {tool:<18} {summary}   (undo until {undo_by})")
            run_id = str(recorder.get("run"))
            windows.append((str(recorder.get("entry")), undo_by))
    _wait_until_closed(log)
    return run_id, windows


def _wait_until_closed(log: Path, timeout: float = 30.0) -> None:
    """The Recorder says on stderr when it has closed the run; reviews go out only for closed runs."""
    deadline = time.monotonic() + timeout
    while "closed, head signed" not in log.read_text(encoding="utf-8", errors="replace"):
        if time.monotonic() > deadline:
            raise ScenarioError(f"the Recorder did not close the run within {timeout} s (see {log})")
        time.sleep(0.05)


def when_played(now: datetime) -> str:
    """``Thursday morning (UTC)``: the calls are made when the story is played, so it says when that is
    (the story is about a Friday evening, but only the review's clock is moved, never the calls')."""
    hour = now.hour
    part = "night" if hour < 5 else "morning" if hour < 12 else "afternoon" if hour < 17 else "evening"
    return f"{now:%A} {part} (UTC)" + (
        "" if f"{now:%A} {part}" == "Friday evening" else ", as if Friday evening"
    )


def _shift(moment: str, *, minutes: int) -> str:
    return wire_time(parse_wire_time(moment) + timedelta(minutes=minutes))


def _notices(root: Path, run_id: str) -> list[tuple[str, str, str]]:
    store = RunStore(root / "recorder.db", SigningKey.from_file(root / "recorder.key"))
    try:
        entries = store.entries(run_id)
    finally:
        store.dispose()
    kinds = ("review", "reminder", "escalation", "seen", "lapse")
    return [
        (e.kind, str(e.body.get("step", "")), str(e.body.get("after", "")))
        for e in entries
        if e.kind in kinds
    ]
