"""The undo commands of ``hatp-recorder``: plan, approve/deny a plan, undo (resume), confirm-link, remedy.

Each command is one short-lived process: it opens the Run Record, connects to the tool servers
the plan needs (from the same configuration the gateway uses) and closes them when done.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Literal

import anyio
import httpx2
from mcp.shared.exceptions import MCPError

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal._shared.text import shown, shown_lines
from hatp_journal.recorder.changes.links import inferred
from hatp_journal.recorder.changes.plan import ReversalPlan, plan_text, undo_label
from hatp_journal.recorder.config import ConfigError, RecorderConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.directory.not_counted import said_not_counted
from hatp_journal.recorder.intake.downstream_errors import DownstreamCode
from hatp_journal.recorder.policy import Policy, load_policy
from hatp_journal.recorder.record import Entry, RunStore, UnknownRun
from hatp_journal.recorder.record.entry_bodies import AskBody, CallBody, ReversalBody, read_own
from hatp_journal.recorder.record.written_bodies import LinkRecord
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.undo.actions import (
    ask_for_plan,
    authority_now,
    decide_on_plan,
    display_name,
    load_directory,
    run_plan,
    undo_authority,
)
from hatp_journal.recorder.undo.approval import is_plan
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.execute import finished
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.undo.remedy import ask_remedy, perform_remedy
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.recorder.undo.side_effects import side_effects_of
from hatp_journal.toolkit.signing import SigningKey


async def run_command(args: argparse.Namespace, config: RecorderConfig, store: RunStore) -> int:
    """Run one undo command; UndoError propagates to the CLI, which prints its code.

    A tool server that dies while the command talks to it never ends the command in a traceback:
    its connection failing to close after the work is done is one line on stderr (the exit code is
    the work's), and a connection that breaks so hard it stops the work (the MCP client's session
    task fails, cancelling the command) is one line saying so and exit code 1. Either way what was
    done is in the record, and running ``undo`` again finishes an undo.
    """
    policy = load_policy(Path(config.recorder.policy), directory=config.recorder.directory)
    directory = load_directory(config)
    code: int | None = None
    try:
        async with AsyncExitStack() as stack:
            code = await _dispatch(args, config, store, policy, directory, UndoServers(config, store, stack))
    except Exception as error:
        if not server_went_away(error):
            raise
        print(
            f"hatp-recorder: {DownstreamCode.DOWNSTREAM_FAILED}: {_gone_text(args, error, code)}",
            file=sys.stderr,
        )
        return 1 if code is None else code
    assert code is not None  # the block returned normally, so the command ran to its end
    return code


_GONE = (OSError, MCPError, httpx2.TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError)
"""What a connection to a server that died raises (over stdio or HTTP, in any of the MCP client's tasks)."""


def server_went_away(error: BaseException) -> bool:
    """Whether ``error`` (or every error of a group) is a broken connection to a tool server."""
    if isinstance(error, BaseExceptionGroup):
        return all(server_went_away(inner) for inner in error.exceptions)
    return isinstance(error, _GONE)


def _gone_text(args: argparse.Namespace, error: BaseException, code: int | None) -> str:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    why = f"{type(error).__name__}: {' '.join(str(error).split())}"
    if code is not None:  # the work was done; only closing the connection failed
        return f"a tool server's connection did not close cleanly (it went away): {why}"
    ref = getattr(args, "plan", None) or getattr(args, "ask", None)
    again = (
        f"; run `hatp-recorder undo {ref}` again to finish it" if args.command in ("approve", "undo") else ""
    )
    return f"a tool server went away during `{args.command}` ({why}); what was done is recorded{again}"


async def _dispatch(
    args: argparse.Namespace,
    config: RecorderConfig,
    store: RunStore,
    policy: Policy,
    directory: Directory,
    servers: UndoServers,
) -> int:
    if args.command == "plan":
        return await _plan(args, store, policy, directory, servers)
    if args.command in ("approve", "deny"):
        return await _decide(args, store, policy, directory, servers, config)
    if args.command == "undo":
        return await _undo(args.plan, store, servers, config)
    if args.command == "confirm-link":
        return _confirm_link(args, store, policy, directory)
    if args.command == "remedy":
        return _remedy(args, store, policy, directory)
    raise AssertionError(f"not an undo command: {args.command}")  # pragma: no cover


async def _plan(
    args: argparse.Namespace, store: RunStore, policy: Policy, directory: Directory, servers: UndoServers
) -> int:
    request = UndoRequest(from_step=args.from_step, steps=tuple(args.steps or ()))
    try:
        ask = await ask_for_plan(
            store, policy, directory, servers, args.run, request, by=args.by, now=utc_now()
        )
    except UndoError as error:
        if isinstance(error.unfiled, ReversalPlan):  # nothing to undo: shown to who asked, not filed
            plan = error.unfiled
            if args.json:
                print(json.dumps({"ref": None, "digest": None, "plan": plan.wire()}, indent=2))
            else:
                print(plan_text(plan, agent=plan.agent, principal=display_name(directory, plan.principal)))
        raise
    plan = ask.plan
    if args.json:
        print(json.dumps({"ref": ask.ref, "digest": ask.digest, "plan": plan.wire()}, indent=2))
    else:
        entries = {entry.id: entry for entry in store.entries(plan.run)}
        reaches = {s.entry: [e.recipients for e in side_effects_of(s, entries)] for s in plan.steps}
        principal = display_name(directory, plan.principal)
        print(plan_text(plan, agent=plan.agent, principal=principal, reaches=reaches))
        print(f"\nPlan {ask.ref} waits for {plan.undo_authority} (decide by {ask.body.decide_by}).")
    return 0


async def _decide(
    args: argparse.Namespace,
    store: RunStore,
    policy: Policy,
    directory: Directory,
    servers: UndoServers,
    config: RecorderConfig,
) -> int:
    decision: Literal["approve", "deny"] = "approve" if args.command == "approve" else "deny"
    key = SigningKey.from_file(args.key)
    if not is_plan(store, args.ask):
        return await _decide_remedy(args, store, directory, servers, decision, key)
    outcome = await decide_on_plan(
        store,
        policy,
        directory,
        servers,
        args.ask,
        decision,
        person=args.person,
        key=key,
        overrides=getattr(args, "override", None) or (),
        now=utc_now(),
    )
    if not outcome.counted:
        return said_not_counted(outcome.code, outcome.message)
    print(shown(outcome.message))
    if decision == "approve":
        return await _undo(args.ask, store, servers, config)
    return 0


async def _undo(ref: str, store: RunStore, servers: UndoServers, config: RecorderConfig) -> int:
    # The directory and policy are read again at the start and before each step, not taken
    # from when this command started: authority is rechecked at every run and resume.
    reversal = await run_plan(store, ref, servers, utc_now(), authority_now(config))
    print(reversal_text(reversal))
    head = store.latest_checkpoint(reversal.run)
    if head is not None:
        print(f"latest signed head: size {head.size}, {head.head}")
    if not finished(reversal):
        print(
            f"Some steps got no answer from their server: run `hatp-recorder undo {ref}` again to retry "
            "them under the same approval, with the same requests (nothing is compensated twice)."
        )
    lines = read_own(ReversalBody, reversal).steps
    return 0 if all(line.status in ("reversed", "notReversible") for line in lines) else 1


def reversal_text(reversal: Entry) -> str:
    """The Reversal Record as people read it: one aligned line per step, newest first."""
    lines = [f"Reversal Record {reversal.run}/{reversal.id}:"]
    for step in read_own(ReversalBody, reversal).steps:
        receipt = step.receipt if isinstance(step.receipt, dict) else {}  # the server's signed answer
        status = _STATUS_WORDS.get(step.status, step.status)
        undo = step.undo if step.undo is not None else undo_label(step.summary)  # older lines: no undo
        what = step.summary if step.status == "notReversible" else undo
        if step.status == "reversed":
            notes = [
                f"{receipt.get('versionFound')} → {receipt.get('versionLeft')}",
                *receipt.get("sideEffects", []),
            ]
            if receipt.get("override"):
                notes.append(f"overwrote a newer change, by override of {receipt['override'].get('by')}")
        else:
            notes = [step.reason]
        if step.retry:
            notes.append("no answer from its server; running `undo` again retries it")
        if step.remedy:
            notes.append(f"suggested remedy: {step.remedy} (not performed)")
        note = "; ".join(n for n in notes if n)
        lines.append(f"  {status:<14} step {step.step}  {what}" + (f"   ({note})" if note else ""))
    return shown_lines(lines)


_STATUS_WORDS = {"notReversible": "not reversible"}


async def _decide_remedy(
    args: argparse.Namespace,
    store: RunStore,
    directory: Directory,
    servers: UndoServers,
    decision: Literal["approve", "deny"],
    key: SigningKey,
) -> int:
    asks = Asks(store)
    outcome = asks.decide(args.ask, decision, person=args.person, key=key, directory=directory, now=utc_now())
    if not outcome.counted:
        return said_not_counted(outcome.code, outcome.message)
    print(shown(outcome.message))
    if decision == "approve":
        entry = await perform_remedy(store, asks.find(args.ask), servers)
        call = read_own(CallBody, entry)
        status = call.outcome.status if call.outcome is not None else "failed"
        print(shown(f"remedy {entry.run}/{entry.id} for {call.remedies}: {status}"))
        return 0 if status == "ok" else 1
    return 0


def _confirm_link(args: argparse.Namespace, store: RunStore, policy: Policy, directory: Directory) -> int:
    try:
        entries = store.entries(args.run)
    except UnknownRun:
        raise UndoError(UndoCode.UNKNOWN_RUN, f"there is no run {args.run!r}") from None
    link = next((x for x in inferred(entries) if (x.entry, x.on) == (args.entry, args.on)), None)
    if link is None:
        raise UndoError(
            UndoCode.UNKNOWN_ENTRY, f"{args.entry} has no inferred link on {args.on} in {args.run}"
        )
    key = SigningKey.from_file(args.key)
    refusal = directory.may_decide(args.person, undo_authority(policy), key.public)
    if refusal is not None:
        raise UndoError(UndoCode.NOT_PERMITTED, refusal)
    stamp = wire_time(utc_now())
    confirmation = {
        "run": args.run,
        "entry": args.entry,
        "on": args.on,
        "via": link.via,
        "by": args.person,
        "at": stamp,
    }
    body = LinkRecord(
        entry=args.entry,
        on=args.on,
        via=link.via,
        by=args.person,
        source="confirmed",
        receipt=key.sign({"link": confirmation}, stamp).wire(),
        directory=store.keep_directory(directory.snapshot()),
    )
    entry = store.append(args.run, "link", body.wire())
    print(f"{args.run}/{entry.id}: {args.entry} relies on {args.on} (confirmed by {args.person})")
    return 0


def _remedy(args: argparse.Namespace, store: RunStore, policy: Policy, directory: Directory) -> int:
    server, dot, tool = args.call.partition(".")
    if not dot or not server or not tool:
        raise ConfigError(f"--call must be server.tool, got {args.call!r}")
    try:
        arguments = json.loads(args.arguments)
    except ValueError as error:
        raise ConfigError(f"--arguments is not JSON: {error}") from None
    if not isinstance(arguments, dict):
        raise ConfigError("--arguments must be a JSON object")
    if (people := directory).person(args.by) is None:
        raise UndoError(UndoCode.NOT_PERMITTED, people.not_listed(args.by))
    entry = ask_remedy(
        store,
        args.entry,
        server=server,
        tool=tool,
        arguments=arguments,
        by=args.by,
        policy=policy,
        now=utc_now(),
    )
    run = args.entry.rpartition("/")[0]
    asked = read_own(AskBody, entry)
    print(shown(f"remedy ask {run}/{entry.id} waits for {asked.approver} (decide by {asked.decide_by})"))
    return 0
