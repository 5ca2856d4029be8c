"""The D-881 story (SPEC §0) against the real demo servers over stdio MCP and a real mail sink.

The agent ("sales-bot for Dana") wins deal D-881, books the Globex kickoff and emails the buyer; then the
run is undone by calling each server's ``hatp_journal_compensate`` directly. There is no Recorder yet:
the run record, the reversal plan and its approval come in a later issue, so the preview printed here is
built straight from the journal objects the servers returned.
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.types import CallToolResult

from hatp_journal.servers.mailsink import MailSink
from hatp_journal.toolkit import META_KEY

AGENT = "sales-bot for Dana"
SENDER = "sales-bot@acme.com"
ATTENDEES = ["buyer@globex.com", "dana@acme.com"]
_SERVERS = {
    "crm": ["hatp_journal.servers.crm.cli"],
    "calendar": ["hatp_journal.servers.calendar", "--organizer", SENDER],
    "email": ["hatp_journal.servers.email.cli", "--from", SENDER],
}


class ScenarioError(Exception):
    """A step of the story did not go as it must; the message is one line for the user."""


@dataclass(frozen=True)
class Step:
    """One agent call: which server and tool, and the journal object the server returned."""

    server: str
    tool: str
    journal: dict[str, Any]


def _client(name: str, workdir: Path, smtp_port: int) -> Client[StdioTransport]:
    """A client for one demo server started as ``serve`` over stdio with its store under ``workdir``."""
    module, *options = _SERVERS[name]
    arguments = ["-m", module, "serve", "--db", str(workdir / f"{name}.db"), *options]
    if name != "crm":
        arguments += ["--smtp-host", "127.0.0.1", "--smtp-port", str(smtp_port)]
    log = workdir / f"{name}.log"  # the server's stderr, kept out of the story's output
    environment = dict(os.environ)
    return Client(StdioTransport(sys.executable, arguments, env=environment, cwd=str(workdir), log_file=log))


async def _connect(stack: AsyncExitStack, workdir: Path, smtp_port: int) -> dict[str, Client[StdioTransport]]:
    """Start the three servers concurrently; each one that started is closed by ``stack``."""
    clients = {name: _client(name, workdir, smtp_port) for name in _SERVERS}
    entering = (stack.enter_async_context(client) for client in clients.values())
    started = await asyncio.gather(*entering, return_exceptions=True)
    for name, outcome in zip(clients, started, strict=True):
        if isinstance(outcome, BaseException):
            raise ScenarioError(f"{name} server did not start ({outcome}); see {workdir / name}.log")
    return clients


async def _call(client: Client[StdioTransport], tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """Call ``tool``; a tool error becomes a :class:`ScenarioError`."""
    result = await client.call_tool_mcp(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(part, "text", "") for part in result.content).strip()
        raise ScenarioError(f"{tool} failed: {text or 'no message'}")
    return result


def _journal(result: CallToolResult, tool: str) -> dict[str, Any]:
    """The ``_meta["hatp/journal"]`` object of a result."""
    journal = (result.meta or {}).get(META_KEY)
    if not isinstance(journal, dict):
        raise ScenarioError(f"{tool} returned no journal object")
    return journal


def _undo_label(summary: str) -> str:
    """How a compensating step reads in the preview: ``A → B`` becomes ``B → A``, Create becomes Cancel."""
    head, arrow, tail = summary.rpartition(" → ")
    if arrow:
        prefix, _, old = head.rpartition(": ")
        return f"{prefix}: {tail} → {old}" if prefix else f"{tail} → {old}"
    return "Cancel " + summary.removeprefix("Create ") if summary.startswith("Create ") else summary


def print_preview(steps: list[Step], out: TextIO) -> list[Step]:
    """Print the undo preview in the SPEC §0 shape; return the compensable steps, newest first."""
    undoable = [s for s in reversed(steps) if (s.journal.get("undo") or {}).get("kind") == "compensate"]
    print(f"\nUndo {len(undoable)} actions by {AGENT}:", file=out)
    for number, step in enumerate(undoable, 1):
        effects = ", ".join(step.journal["undo"].get("sideEffects") or [])
        label = _undo_label(step.journal["effect"]["summary"])
        print(f"  {number}. {label}" + (f"   ({effects})" if effects else ""), file=out)
    print("Cannot be undone:", file=out)
    for step in steps:
        if (step.journal.get("undo") or {}).get("kind") == "none":
            print(f"  - {step.journal['effect']['summary']}   ({step.journal.get('reason')})", file=out)
    return undoable


async def run(workdir: Path, out: TextIO = sys.stdout) -> None:
    """Play the D-881 story in ``workdir`` (a fresh directory), printing what happens to ``out``."""
    if any((workdir / used).exists() for used in ("mail", *(f"{name}.db" for name in _SERVERS))):
        raise ScenarioError(f"{workdir} already holds a D-881 run; pass an empty --workdir")
    workdir.mkdir(parents=True, exist_ok=True)
    sink = MailSink(workdir / "mail").start()
    try:
        async with AsyncExitStack() as stack:
            await _play(await _connect(stack, workdir, sink.port), sink, out)
    finally:
        sink.stop()


async def _play(clients: dict[str, Client[StdioTransport]], sink: MailSink, out: TextIO) -> None:
    """The agent's three calls, the preview, the compensations and what the sink received."""
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("crm", "update_deal", {"deal_id": "D-881", "stage": "Won"}),
        (
            "calendar",
            "create_event",
            {
                "summary": "Kickoff with Globex",
                "start": "2026-11-04T15:00:00Z",
                "end": "2026-11-04T16:00:00Z",
                "attendees": ATTENDEES,
            },
        ),
        (
            "email",
            "send_email",
            {
                "to": ["buyer@globex.com"],
                "subject": "Welcome to Acme",
                "body": "Hello Globex team,\n\nwelcome to Acme! We look forward to the kickoff.\n\nDana",
            },
        ),
    ]
    print(f"Run by {AGENT} (no Recorder yet: run record, plan and approval come in a later issue)", file=out)
    steps: list[Step] = []
    for number, (server, tool, arguments) in enumerate(calls, 1):
        journal = _journal(await _call(clients[server], tool, arguments), tool)
        steps.append(Step(server, tool, journal))
        undo = journal.get("undo") or {}
        print(f"  step {number} {tool}: {journal['effect']['summary']}", file=out)
        print(f"         undo: {undo.get('kind')}, until {undo.get('undoBy') or '-'}", file=out)
    sink.wait_for(3, timeout=10.0)

    undoable = print_preview(steps, out)
    print("\nUndoing (approved by hand: no Recorder yet):", file=out)
    for step in undoable:
        request = {"token": step.journal["compensationToken"], "ifVersion": step.journal["effect"]["version"]}
        result = await clients[step.server].call_tool_mcp("hatp_journal_compensate", request)
        answer = _journal(result, "hatp_journal_compensate")
        effects = answer.get("sideEffects") or []
        print(f"  {step.tool}: {answer.get('status')}; side effects: {effects}", file=out)
        if answer.get("status") != "done":
            raise ScenarioError(f"undo of {step.tool} ended {answer.get('status')}: {answer.get('message')}")
    for step in steps:
        if step.journal.get("remedy"):
            print(f"  {step.tool}: remedy {step.journal['remedy']!r} (suggested, not sent)", file=out)

    delivered = sink.wait_for(5, timeout=10.0)
    print(f"\nMail sink received {len(delivered)} messages:", file=out)
    for message in delivered:
        method = message.calendar_method or "plain email"
        print(f"  {method:<11} to {', '.join(message.envelope_to)}: {message.subject}", file=out)
    deal = (await _call(clients["crm"], "get_deal", {"deal_id": "D-881"})).structured_content or {}
    print(f"Deal D-881 is now at {deal.get('stage')} ({deal.get('version')})", file=out)
