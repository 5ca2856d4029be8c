"""What ``hatp-recorder``'s commands do, once :mod:`hatp_journal.recorder.cli.command_line` has
read the arguments.

Kept apart from the argument parser so that ``hatp-recorder --help`` does not import the gateway,
the MCP stack and the Run Record; and the commands that talk to tool servers (``serve``, the undo
commands) or serve pages (``web``) import those parts themselves, so that reading, exporting and
verifying a record does not wait for them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import anyio

from hatp_journal._shared.clock import parse_wire_time, utc_now, wire_time
from hatp_journal._shared.text import json_for_people, shown
from hatp_journal.recorder import tracing
from hatp_journal.recorder.cli.bad_input import said_as_bad_input
from hatp_journal.recorder.cli.columns import aligned
from hatp_journal.recorder.cli.serve_start import serve
from hatp_journal.recorder.cli.show import entry_lines
from hatp_journal.recorder.cli.store_check import store_check
from hatp_journal.recorder.cli.verify import verify_command
from hatp_journal.recorder.config import ConfigError, RecorderConfig, load_config
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.directory.not_counted import said_not_counted
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.record.entry_bodies import Unreadable
from hatp_journal.recorder.record.export import export_run_to
from hatp_journal.recorder.runs.ask_words import ask_row
from hatp_journal.recorder.runs.asks import Asks, in_doubt
from hatp_journal.recorder.runs.notice_mail import MAIL_DEFERRED
from hatp_journal.recorder.runs.reminders import record_seen, tick
from hatp_journal.recorder.runs.tick_lines import tick_lines
from hatp_journal.recorder.runs.walk import each_run
from hatp_journal.recorder.undo.actions import load_directory
from hatp_journal.recorder.undo.approval import listed_plans
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.owned_commands import handles
from hatp_journal.recorder.web.views import review
from hatp_journal.toolkit.signing import SigningKey

_log = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> int:
    """Run the command ``args`` names; returns the exit code (2 for bad input, 1 for a record that fails)."""
    try:
        if args.command == "verify":
            return verify_command(args)
        config = load_config(args.config)
        tracing.configure(config.recorder.tracing)
        if args.command == "serve":  # hatp-recorder itself goes there without importing this module
            return serve(args)
        if args.command in ("web", "web-link"):  # lazy: each command loads only what it runs
            from hatp_journal.recorder.web import commands as web_commands

            return web_commands.run(args, config)
        if args.command == "store-check":
            for line in store_check(config.recorder.store):
                print(line)
            return 0
        store = RunStore(config.recorder.store, SigningKey.load_or_create(config.recorder.key))
        if args.command == "tick":
            return _tick(store, config, args.now)
        if args.command == "review":
            return _review(store, config, args)
        if handles(args, store):  # lazy: as web (an agent's call approved or denied reaches no server)
            from hatp_journal.recorder.undo import commands as undo_commands

            return int(anyio.run(undo_commands.run_command, args, config, store) or 0)
        if args.command == "runs":
            for run in store.runs():
                print(f"{run.id}\t{run.agent}\t{run.principal}")
        elif args.command in ("asks", "approve", "deny"):
            return _asks(store, config, args)
        elif args.command == "show" and args.json:
            print(json_for_people([entry.wire() for entry in store.entries(args.run)], indent=2))
        elif args.command == "show":
            for line in entry_lines(store.entries(args.run)):
                print(line)
        elif args.command == "export":
            export_run_to(store, args.run, args.out)
            print(args.out)
        elif args.command == "head":
            return _head(store, args.run, args.out)
        elif args.command == "witnesses":  # lazy: as web
            from hatp_journal.recorder.witness.sender import witnesses_command

            return witnesses_command(store, config.witnesses, send=args.send)
    except Exception as error:
        if not said_as_bad_input(error):
            raise
        return 2
    return 0


def _asks(store: RunStore, config: RecorderConfig, args: argparse.Namespace) -> int:
    if config.recorder.directory is None:
        raise ConfigError("[recorder] directory is not set: nobody can decide asks")
    directory = Directory.load(Path(config.recorder.directory))
    asks = Asks(store)
    now = utc_now()
    overdue = lambda run: asks.withdraw_overdue(run.id, now, directory)  # noqa: E731
    withdrawing = each_run(store, overdue, logger=_log, doing="withdrawing overdue asks")
    for _ in withdrawing:
        pass
    if args.command == "asks":
        from hatp_journal.recorder.runs.keys import stalled_approvals  # lazy: as in _tick

        rows = []
        for ask in asks.listed():
            if ask.state == "unreadable":
                rows.append([ask.ref, "unreadable", "", "", "", "", "", shown_marker(ask.unreadable)])
                continue
            row = ask_row(ask)
            earlier = in_doubt(store, ask.run).get(ask.terms.call_digest, [])
            row[-1] += "".join(
                f"; an earlier approval of this call ({ref}) is in doubt: {why}" for ref, why in earlier
            )
            rows.append(row)
        for ask, what in stalled_approvals(store, now):
            rows.append(
                [ask.ref, f"{ask.terms.server}.{ask.terms.tool}", f"approved: {what}", "", "", "", "", ""]
            )
        for plan in listed_plans(store):
            if plan.state == "unreadable":
                rows.append([plan.ref, "unreadable plan", "", "", "", "", "", shown_marker(plan.unreadable)])
                continue
            by_when = f"decide by {plan.decide_by}"
            summary = (
                f"{len(plan.plan.steps)} to undo, {len(plan.plan.conflicts)} conflicts, "
                f"{len(plan.plan.not_reversible)} cannot be undone"
            )
            rows.append([plan.ref, f"undo {plan.plan.request}", "", summary, "", "", "", by_when])
        for line in aligned(rows):  # one line per ask, every cell made safe
            print(line)
        return 0
    decision: Literal["approve", "deny"] = "approve" if args.command == "approve" else "deny"
    outcome = asks.decide(
        args.ask,
        decision,
        person=args.person,
        key=SigningKey.from_file(args.key),
        directory=directory,
        now=now,
    )
    if not outcome.counted:
        return said_not_counted(outcome.code, outcome.message)
    print(shown(outcome.message))
    head = store.latest_checkpoint(args.ask.rpartition("/")[0])
    if head is not None:
        print(f"latest signed head: size {head.size}, {head.head}")
    return 0


def shown_marker(marker: Unreadable | None) -> str:
    """``BODY_UNREADABLE: decideBy``: what did not fit in an entry listed as unreadable."""
    return marker.text() if marker is not None else "unreadable"


def _now(at: str | None) -> datetime:
    try:
        return parse_wire_time(at) if at else utc_now()
    except ValueError:
        raise ConfigError(f"--now must look like 2026-11-07T18:00:00Z, got {at!r}") from None


def _review(store: RunStore, config: RecorderConfig, args: argparse.Namespace) -> int:
    now = _now(args.now)
    if (people := load_directory(config)).person(args.person) is None:
        raise UndoError(UndoCode.NOT_PERMITTED, people.not_listed(args.person))
    try:
        run = store.run(args.run)
    except UnknownRun:
        raise UndoError(UndoCode.UNKNOWN_RUN, f"there is no run {args.run!r}") from None
    if run.closed_at is not None:
        record_seen(store, run.id, args.person, now)
    windows, others = review(store.entries(run.id), now)
    print(f"Run {run.id} by {run.agent} for {run.principal}, read at {wire_time(now)}:")
    rows = [[f"step {w.number}", w.left, w.summary, f"until {w.undo_by}"] for w in windows]
    rows += [[f"step {o.number}", "—", o.summary, f"({o.note})"] for o in others]
    for text in aligned(rows, indent="  "):
        print(text)
    return 0


def _tick(store: RunStore, config: RecorderConfig, at: str | None) -> int:
    now = _now(at)
    policy = load_policy(Path(config.recorder.policy), directory=config.recorder.directory)
    directory = load_directory(config)
    from hatp_journal.recorder.runs.keys import RunKeys  # lazy: only asks and tick read run keys

    # Closed first: a run's review is due once it has closed.
    for closed in RunKeys(store).close_idle(now, timedelta(seconds=config.recorder.run_idle_seconds)):
        print(f"{closed}\tclosed: idle for more than {config.recorder.run_idle_seconds:g} s")
    entries, problems = tick(store, policy, directory, config.mail, now, config.web.base_url)
    for text in aligned(tick_lines(entries)):
        print(text)
    for problem in problems:
        print(f"hatp-recorder: {problem}", file=sys.stderr)
    # A mail deferred is tried again by the next tick: only what is lost for good fails the command.
    return 1 if any(not p.startswith(f"{MAIL_DEFERRED}:") for p in problems) else 0


async def serve_spawned(
    config: RecorderConfig,
    transport: str,
    host: str,
    port: int,
    stack: AsyncExitStack,
    spawned: dict[str, Any],
) -> None:
    """Serve the agent until stdin closes or a signal comes, the tool servers ``spawned`` already
    (``recorder/cli/serve_start.py``), each stopped when ``stack`` closes if its link has not."""
    # lazy: the MCP stack loads while the tool servers boot (recorder/cli/serve_start.py)
    from hatp_journal.recorder.front.http import serve_http
    from hatp_journal.recorder.front.stdio import serve_stdio
    from hatp_journal.recorder.gateway.core import Recorder

    policy = load_policy(Path(config.recorder.policy), directory=config.recorder.directory)
    store = RunStore(
        config.recorder.store,
        SigningKey.load_or_create(config.recorder.key),
        checkpoint_every=config.recorder.checkpoint_every,
    )
    recorder = Recorder(config, store=store, policy=policy)
    mcp = await recorder.start(stack, spawned)
    try:
        async with anyio.create_task_group() as tasks:
            # A stdio client ends its server with SIGTERM; the run must still be closed and signed.
            if transport == "stdio":
                tasks.start_soon(_cancel_on_signal, tasks.cancel_scope)
                await serve_stdio(recorder, mcp)
            else:
                with _signals_cancel(tasks.cancel_scope):
                    await serve_http(recorder, mcp, host, port)
            tasks.cancel_scope.cancel()
    finally:
        if recorder.run_id is None:
            print("hatp-recorder: no call came: no run was opened", file=sys.stderr, flush=True)
        elif recorder.close():
            print(f"hatp-recorder: run {recorder.run_id} closed, head signed", file=sys.stderr, flush=True)
        else:  # callers may come back to it with its run key
            print(f"hatp-recorder: run {recorder.run_id} left open", file=sys.stderr, flush=True)


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


@contextmanager
def _signals_cancel(scope: anyio.CancelScope) -> Iterator[None]:
    """SIGTERM and SIGINT cancel ``scope``. The web server puts its own handlers above these while it
    serves: it stops first (requests answered, lifespan ended: no traceback), then raises the signal
    again, which lands here."""
    loop = asyncio.get_running_loop()

    def cancel(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(scope.cancel)

    previous = {sig: signal.signal(sig, cancel) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _head(store: RunStore, run: str, out: Path | None) -> int:
    head = store.latest_checkpoint(run) or store.checkpoint(run, "manual")
    text = json.dumps(head.wire(), indent=2)
    if out is None:
        print(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        print(out)
    return 0
