"""The D-881 story (protocol.md §0), played by real processes: an agent, a Recorder, three tool servers.

1. The agent (a scripted MCP client, no model) connects to ``hatp-recorder serve`` over stdio and
   wins deal D-881, books the Globex kickoff and emails the buyer; the email waits for Lee's
   approval, which the story gives with ``hatp-recorder approve``.
2. Optionally Eve moves the deal to Negotiation in the CRM, outside the run.
3. Dana asks to undo the run from step 1: ``hatp-recorder plan`` prints the Reversal Plan.
4. Lee approves it (with ``--override`` in the override variant) and the compensations run.
5. What happened, judged from the outside: the mail sink, the deal, the verified Run Record.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.undo.approval import find_plan
from hatp_journal.recorder.undo.commands import reversal_text
from hatp_journal.recorder.undo.execute import reversal_of
from hatp_journal.recorder.web import WebApprover
from hatp_journal.recorder.web.server import serving
from hatp_journal.scenarios.d881.world import (
    ATTENDEES,
    DANA,
    LEE,
    ScenarioError,
    World,
    build_world,
    start_mail_sink,
)
from hatp_journal.servers.mailsink import read_maildir
from hatp_journal.toolkit import SigningKey

OUTCOME_SHOWN_SECONDS = 15.0
"""After the undo, how long the approver keeps serving until Lee's page has shown its outcome."""

KICKOFF_AFTER = timedelta(days=14)
"""The kickoff is booked this long after the day the story runs (15:00 UTC), so it is in the future."""


def kickoff(today: date) -> datetime:
    """When the Globex kickoff starts, for a story played on ``today``."""
    return datetime.combine(today + KICKOFF_AFTER, datetime.min.time(), tzinfo=UTC).replace(hour=15)


def calls(today: date) -> list[tuple[str, dict[str, Any]]]:
    """The agent's three calls, for a story played on ``today``."""
    start = kickoff(today)
    return [
        ("crm_update_deal", {"deal_id": "D-881", "stage": "Won"}),
        (
            "calendar_create_event",
            {
                "summary": "Kickoff with Globex",
                "start": wire_time(start),
                "end": wire_time(start + timedelta(hours=1)),
                "attendees": ATTENDEES,
            },
        ),
        (
            "email_send_email",
            {
                "to": ["buyer@globex.com"],
                "subject": "Welcome to Acme",
                "body": "Hello Globex team,\n\nwelcome to Acme! We look forward to the kickoff.\n\nDana",
            },
        ),
    ]


@dataclass(frozen=True)
class Told:
    """What the story printed, kept for whoever ran it (tests read it too)."""

    run: str
    plan: str
    plan_ref: str
    reversal: str


async def run(
    workdir: Path,
    out: TextIO | None = None,
    *,
    eve: bool = False,
    override: bool = False,
    browser: bool = False,
    wait_seconds: float = 600.0,
    kept: bool = True,
    in_process: bool = False,
    tracing: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Told:
    """Play the story in ``workdir`` (an empty directory), printing each phase to ``out`` (stdout);
    ``kept`` is False when ``workdir`` is removed afterwards (then no path in it is printed);
    ``in_process`` runs the mail sink and the people's commands here (see :mod:`.world`);
    ``tracing``: the Recorder's OpenTelemetry spans on (docs/recorder.md, "Tracing with OpenTelemetry");
    ``host``/``port``: where the approver's pages are served with ``browser`` (0: any free port)."""
    # Absolute at once: the Recorder and the people's commands run in the work folder itself,
    # so a relative path would mean another folder to each of them.
    workdir = workdir.resolve()
    if workdir.exists() and any(workdir.iterdir()):
        raise ScenarioError(
            f"{workdir} is not empty (an earlier run's stores and mail?): "
            "remove it or pass an empty --workdir"
        )
    if override and not eve:
        raise ScenarioError("--override only makes sense with --eve (there is nothing to override otherwise)")
    workdir.mkdir(parents=True, exist_ok=True)
    sink = start_mail_sink(workdir / "mail", in_process=in_process)
    try:
        world = build_world(workdir, sink.port, kept=kept, in_process=in_process, tracing=tracing)
        decide = _on_the_page(world, wait_seconds, host, port) if browser else None
        return await _play(world, out or sys.stdout, eve=eve, override=override, decide=decide)
    finally:
        sink.stop()


Decide = Callable[[str, Callable[[str], None]], str]
"""Has the plan decided elsewhere (on the web page); returns the Reversal Record as the CLI prints it."""


async def _play(world: World, out: TextIO, *, eve: bool, override: bool, decide: Decide | None) -> Told:
    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    config = ["--config", str(world.config)]
    numbers = itertools.count(1)

    def section(title: str) -> None:
        """A numbered heading: 1..n whichever sections this telling of the story plays."""
        number = next(numbers)
        say(("\n" if number > 1 else "") + f"== {number}. {title}")

    section("The agent's run (sales-bot for Dana, through the Recorder)")
    run_id = await _agent(world, config, say)

    if eve:
        section("Eve moves D-881 to Negotiation in the CRM, outside the run")
        crm = [
            "edit",
            "--db",
            str(world.db("crm")),
            "D-881",
            "--stage",
            "Negotiation",
            "--by",
            "eve@acme.com",
        ]
        world.command(*crm, module="hatp_journal.servers.crm.cli")
        say("  deal D-881: Won → Negotiation (by eve@acme.com)")

    section("Dana asks to undo the run from step 1; the Recorder checks each step and plans")
    say("  (the Recorder starts the three servers and asks each to check its step: 10-30 s on 2 cores)")
    planned = world.command(*config, "plan", run_id, "--from", "1", "--by", DANA)
    plan_text, _, waiting = planned.rstrip("\n").partition("\n\nPlan ")
    say(plan_text)
    plan_ref = waiting.split(" ", 1)[0]
    say(f"\n  (plan {plan_ref} waits for the team lead)")

    if decide is not None:
        section("Lee (team lead) decides on the approver's page")
        reversal = decide(plan_ref, say)
    else:
        section("Lee (team lead) approves" + (", overriding Eve's change to the deal" if override else ""))
        approve = [*config, "approve", plan_ref, "--as", LEE, "--key", str(world.key(LEE))]
        if override:
            approve += ["--override", _conflicted(world, plan_ref)]
        reversal = world.command(*approve, ok=(0, 1))
    say(_indent(_explain_head(reversal.rstrip("\n"))))

    section("What happened")
    _report(world, config, run_id, say)
    return Told(run_id, plan_text, plan_ref, reversal)


async def _agent(world: World, config: list[str], say: Any) -> str:
    """The scripted agent: three calls through the Recorder, the email after Lee's approval."""
    log = world.root / "recorder.log"
    transport = StdioTransport(
        sys.executable,
        ["-m", "hatp_journal.recorder.cli.command_line", *config, "serve"],
        cwd=str(world.root),
        log_file=log,
        # The SDK's default environment for a server leaves OTEL_* out: a traced Recorder needs them.
        env={name: value for name, value in os.environ.items() if name.startswith("OTEL_")},
    )
    async with AsyncExitStack() as stack:
        agent = await stack.enter_async_context(Client(transport, timeout=60))
        for number, (tool, arguments) in enumerate(calls(utc_now().date()), 1):
            result = await agent.call_tool_mcp(tool, arguments)
            answer = result.structured_content or {}
            if answer.get("status") == "pending_approval":
                say(f"  step {number}  {tool:<22} waits for approval ({answer['ask']})")
                run_id = str(answer["run"])
                said = world.command(
                    *config, "approve", f"{run_id}/{answer['ask']}", "--as", LEE, "--key", str(world.key(LEE))
                )
                say(f"          Lee approves: {said.splitlines()[0]}")
                result = await agent.call_tool_mcp(tool, arguments)
            if result.is_error:
                text = " ".join(getattr(part, "text", "") for part in result.content)
                raise ScenarioError(f"{tool} failed: {text.strip() or 'no message'} ({world.log_hint(log)})")
            say(f"  step {number}  {tool:<22} {_summary(result.meta)}")
            run_id = str(((result.meta or {}).get("hatp/recorder") or {}).get("run"))
    return run_id


def _summary(meta: dict[str, Any] | None) -> str:
    journal = (meta or {}).get("hatp/journal") or {}
    effect = journal.get("effect") or {}
    undo = journal.get("undo") or {}
    until = f"undo until {undo['undoBy']}" if undo.get("undoBy") else f"undo: {undo.get('kind', 'unknown')}"
    return f"{effect.get('summary', '')}   ({until})"


def _on_the_page(world: World, wait_seconds: float, host: str, port: int) -> Decide:
    """Serve the approver, print Lee's sign-in link and the plan's page, and wait for the decision."""

    def decide(plan_ref: str, say: Callable[[str], None]) -> str:
        with world.config.open("a", encoding="utf-8") as config:
            config.write('\n[web]\nkeys = "."\n')  # the demo's keys lie beside recorder.toml
        approver = WebApprover(load_config(world.config))
        try:
            with serving(approver.app, host, port) as url:
                approver.config.web.base_url = url
                say(f"  Sign in as Lee: {approver.link(LEE)}")
                say(f"  then open the plan: {url}/plans/{plan_ref}")
                say(f"  (waiting up to {wait_seconds:.0f} s for the decision made on the page)")
                told = _wait_for_decision(approver.store, plan_ref, wait_seconds)
                _wait_for(lambda: plan_ref in approver.shown_outcomes, OUTCOME_SHOWN_SECONDS)
                return told
        finally:
            approver.close()

    return decide


def _wait_for(done: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.1)


def _wait_for_decision(store: RunStore, plan_ref: str, wait_seconds: float) -> str:
    deadline = time.monotonic() + wait_seconds
    while True:
        ask = find_plan(store, plan_ref)
        if ask.state == "denied":
            return f"Lee denied {plan_ref} on the page; nothing was undone."
        reversal = reversal_of(store.entries(ask.run), ask.entry.id)
        if reversal is not None:
            return reversal_text(reversal)
        if time.monotonic() > deadline:
            raise ScenarioError(f"nobody decided {plan_ref} on the page within {wait_seconds:.0f} s")
        time.sleep(0.2)


def _conflicted(world: World, plan_ref: str) -> str:
    """The conflicted step of the plan (the deal), as the Run Record holds it."""
    run_id, _, entry = plan_ref.partition("/")
    store = RunStore(world.root / "recorder.db", SigningKey.from_file(world.root / "recorder.key"))
    try:
        conflicts = [c["entry"] for c in store.entry(run_id, entry).body["plan"].get("conflicts", [])]
    finally:
        store.dispose()
    if not conflicts:
        raise ScenarioError("the plan shows no conflict to override")
    return str(conflicts[0])


def _report(world: World, config: list[str], run_id: str, say: Any) -> None:
    delivered = read_maildir(world.mail)
    say(f"  mail sink: {len(delivered)} messages")
    for message in delivered:
        method = message.calendar_method or "email"
        say(f"    {method:<8} to {', '.join(message.envelope_to):<18} {message.subject}")
    deal = json.loads(
        world.command("show", "--db", str(world.db("crm")), "D-881", module="hatp_journal.servers.crm.cli")
    )
    say(f"  deal D-881: {deal['stage']} ({deal['version']})")
    exported = world.root / "run-record.json"
    world.command(*config, "export", run_id, "--out", str(exported))
    pins = [
        "--recorder-key",
        str(world.root / "recorder.key"),
        "--directory",
        str(world.root / "directory.json"),
    ]
    verdict = world.command("verify", str(exported), *pins, ok=(0, 1))
    # Where it lies only when it stays there: a story in a temporary folder takes it away at the end.
    where = f" ({exported})" if world.kept else ""
    verdict_line = verdict.strip().splitlines()[-1]
    say(f"  the Run Record, exported{where} and checked offline: verify says {verdict_line}")


def _explain_head(text: str) -> str:
    """The approve command's "latest signed head" line, followed by what it means."""
    lines = []
    for line in text.splitlines():
        lines.append(line)
        if line.startswith("latest signed head: size "):
            size = line.removeprefix("latest signed head: size ").split(",", 1)[0]
            lines.append(
                f"  (the Recorder signed one hash over the record's first {size} entries: "
                "`verify` checks that none of them was changed or dropped since)"
            )
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.splitlines())
