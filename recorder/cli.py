"""``hatp-recorder``: serve the gateway, and read, export and verify Run Records."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Literal

import anyio

from hatp_journal.recorder.asks import Asks
from hatp_journal.recorder.config import ConfigError, RecorderConfig, load_config
from hatp_journal.recorder.directory import Directory, DirectoryError
from hatp_journal.recorder.downstream import DownstreamError
from hatp_journal.recorder.export import export_run_to
from hatp_journal.recorder.gateway import Recorder
from hatp_journal.recorder.policy import PolicyFileError, load_policy
from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.reminders import record_seen, tick
from hatp_journal.recorder.show import entry_line
from hatp_journal.recorder.store_check import store_check
from hatp_journal.recorder.undo import commands as undo_commands
from hatp_journal.recorder.undo.actions import load_directory
from hatp_journal.recorder.undo.approval import pending_plans
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.verify_cli import verify_command
from hatp_journal.recorder.web import commands as web_commands
from hatp_journal.recorder.web.views import review
from hatp_journal.toolkit.clock import parse_wire_time, utc_now, wire_time
from hatp_journal.toolkit.errors import KeyFileError, StoreError
from hatp_journal.toolkit.signing import SigningKey


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input, 1 for a record that fails)."""
    parser = argparse.ArgumentParser(prog="hatp-recorder", description=__doc__)
    parser.add_argument("--config", type=Path, default=Path("recorder.toml"))
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the agent over stdio or HTTP")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    web = commands.add_parser("web", help="serve the approver's pages in a browser (127.0.0.1)")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8766)
    link = commands.add_parser("web-link", help="print a one-time sign-in link to the approver's pages")
    link.add_argument("--as", dest="person", required=True, help="your id in the directory")
    tick = commands.add_parser(
        "tick", help="send what is due: reviews, reminders, escalations; record lapses"
    )
    tick.add_argument("--now", help="act as if it were this UTC time (YYYY-MM-DDTHH:MM:SSZ), for demos")
    look = commands.add_parser(
        "review", help="what of a run can still be undone, now (records that you looked)"
    )
    look.add_argument("run")
    look.add_argument("--as", dest="person", required=True, help="your id in the directory")
    look.add_argument("--now", help="act as if it were this UTC time, for demos")
    commands.add_parser("runs", help="list runs")
    commands.add_parser(
        "store-check",
        help="check the store's schema versions, changing nothing (exit 0 usable, 2 not)",
    )
    commands.add_parser("asks", help="list pending asks (withdrawing those past their deadline)")
    for verb in ("approve", "deny"):
        decide = commands.add_parser(verb, help=f"{verb} an ask, signed with your key")
        decide.add_argument("ask", help="RUN/eN, as `asks` prints it")
        decide.add_argument("--as", dest="person", required=True, help="your id in the directory")
        decide.add_argument("--key", type=Path, required=True, help="your Ed25519 key file")
        if verb == "approve":
            decide.add_argument(
                "--override",
                action="append",
                metavar="eN",
                help="overwrite what changed in this conflicted step of a plan (its own signed choice)",
            )
    undo_commands.add_commands(commands)
    show = commands.add_parser("show", help="show a run's entries")
    show.add_argument("run")
    show.add_argument("--json", action="store_true", help="print the entries as stored, as JSON")
    export = commands.add_parser("export", help="write a self-contained Run Record file")
    export.add_argument("run")
    export.add_argument("--out", type=Path, required=True)
    head = commands.add_parser("head", help="print a run's latest signed head (a checkpoint, as JSON)")
    head.add_argument("run")
    head.add_argument("--out", type=Path, help="write it to this file instead")
    verify = commands.add_parser(
        "verify",
        help="verify a Run Record file offline (exit 0 ok, 1 the record fails, 2 could not run)",
        description="Check every hash and signature of an exported Run Record. What you do not pin "
        "is taken from the file and said so (trust on first use).",
    )
    verify.add_argument("file", type=Path)
    verify.add_argument(
        "--recorder-key",
        type=Path,
        help="the Recorder's public key to pin (JSON from `hatp-journal pubkey`) or its key file",
    )
    verify.add_argument(
        "--server-key",
        action="append",
        default=[],
        metavar="NAME=KEY",
        help="pin a tool server's key (a file as for --recorder-key); repeat for each key",
    )
    verify.add_argument("--directory", type=Path, help="the directory file to check decisions against")
    verify.add_argument(
        "--head", type=Path, help="the latest signed head, held outside the Recorder (from `head`)"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "verify":
            return verify_command(args)
        config = load_config(args.config)
        if args.command == "serve":
            anyio.run(_serve, config, args.transport, args.host, args.port)
            return 0
        if args.command in ("web", "web-link"):
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
        if undo_commands.handles(args, store):
            return int(anyio.run(undo_commands.run_command, args, config, store))
        if args.command == "runs":
            for run in store.runs():
                print(f"{run.id}\t{run.agent}\t{run.principal}")
        elif args.command in ("asks", "approve", "deny"):
            return _asks(store, config, args)
        elif args.command == "show" and args.json:
            print(
                json.dumps([entry.wire() for entry in store.entries(args.run)], indent=2, ensure_ascii=False)
            )
        elif args.command == "show":
            for entry in store.entries(args.run):
                print(entry_line(entry))
        elif args.command == "export":
            export_run_to(store, args.run, args.out)
            print(args.out)
        elif args.command == "head":
            return _head(store, args.run, args.out)
    except StoreError as error:  # a bad URL, an unreachable database, a schema of a later version
        print(f"hatp-recorder: {error.code}: {error.message}", file=sys.stderr)
        return 2
    except (ConfigError, PolicyFileError, KeyFileError, DirectoryError, KeyError) as error:
        said = error.args[0] if isinstance(error, KeyError) and error.args else error  # no repr quotes
        print(f"hatp-recorder: error: {said}", file=sys.stderr)
        return 2
    except UndoError as error:
        print(f"hatp-recorder: {error.code}: {error.message}", file=sys.stderr)
        return 2
    except DownstreamError as error:  # serve: a tool server that won't start, answers garbage, or changed key
        print(f"hatp-recorder: {error.code}: {error.message}", file=sys.stderr)
        return 2
    except UnknownRun as error:  # show, export, approve/deny of an ask in a run that does not exist
        print(f"hatp-recorder: {UndoCode.UNKNOWN_RUN}: {error}", file=sys.stderr)
        return 2
    return 0


def _asks(store: RunStore, config: RecorderConfig, args: argparse.Namespace) -> int:
    if config.recorder.directory is None:
        raise ConfigError("[recorder] directory is not set: nobody can decide asks")
    directory = Directory.load(Path(config.recorder.directory))
    asks = Asks(store)
    now = utc_now()
    for run in store.runs():
        asks.withdraw_overdue(run.id, now, directory)
    if args.command == "asks":
        for ask in asks.pending():
            body = ask.entry.body
            reasons = "; ".join(r["detail"] for r in body["decision"]["reasons"])
            print(f"{ask.ref}\t{body['server']}.{body['tool']}\t{reasons}\tdecide by {ask.decide_by}")
        for plan in pending_plans(store):
            body = plan.entry.body
            summary = f"{len(plan.plan.steps)} steps, {len(plan.plan.conflicts)} conflicts"
            print(f"{plan.ref}\tundo {plan.plan.request}\t{summary}\tdecide by {body['decideBy']}")
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
    print(outcome.message)
    head = store.latest_checkpoint(args.ask.rpartition("/")[0])
    if head is not None:
        print(f"latest signed head: size {head.size}, {head.head}")
    return 0 if outcome.counted else 1


def _now(at: str | None) -> datetime:
    try:
        return parse_wire_time(at) if at else utc_now()
    except ValueError:
        raise ConfigError(f"--now must look like 2026-11-07T18:00:00Z, got {at!r}") from None


def _review(store: RunStore, config: RecorderConfig, args: argparse.Namespace) -> int:
    now = _now(args.now)
    if load_directory(config).person(args.person) is None:
        raise UndoError(UndoCode.NOT_PERMITTED, f"{args.person} is not in the directory")
    try:
        run = store.run(args.run)
    except UnknownRun:
        raise UndoError(UndoCode.UNKNOWN_RUN, f"there is no run {args.run!r}") from None
    if run.closed_at is not None:
        record_seen(store, run.id, args.person, now)
    windows, others = review(store.entries(run.id), now)
    print(f"Run {run.id} by {run.agent} for {run.principal}, read at {wire_time(now)}:")
    for line in windows:
        print(f"  step {line.number}  {line.left:<14} {line.summary}   (until {line.undo_by})")
    for line in others:
        print(f"  step {line.number}  {'—':<14} {line.summary}   ({line.note})")
    return 0


def _tick(store: RunStore, config: RecorderConfig, at: str | None) -> int:
    now = _now(at)
    policy = load_policy(Path(config.recorder.policy))
    directory = load_directory(config)
    entries, failed = tick(store, policy, directory, config.mail, now, config.web.base_url)
    for entry in entries:
        body = entry.body
        to = ", ".join(body.get("mailedTo", [])) or "-"
        print(
            f"{entry.run}/{entry.id}\t{entry.kind}\t{body.get('step', '')}\t{body.get('after', '')}\tto {to}"
        )
    for failure in failed:
        print(f"hatp-recorder: MAIL_FAILED: {failure}", file=sys.stderr)
    return 1 if failed else 0


async def _serve(config: RecorderConfig, transport: str, host: str, port: int) -> None:
    policy = load_policy(Path(config.recorder.policy))
    store = RunStore(
        config.recorder.store,
        SigningKey.load_or_create(config.recorder.key),
        checkpoint_every=config.recorder.checkpoint_every,
    )
    recorder = Recorder(config, store=store, policy=policy)
    async with AsyncExitStack() as stack:
        mcp = await recorder.start(stack)
        try:
            async with anyio.create_task_group() as tasks:
                # A stdio client ends its server with SIGTERM; the run must still be closed and signed.
                tasks.start_soon(_cancel_on_signal, tasks.cancel_scope)
                if transport == "stdio":
                    await mcp.run_async(transport="stdio", show_banner=False)
                else:
                    await mcp.run_async(transport="http", host=host, port=port, show_banner=False)
                tasks.cancel_scope.cancel()
        finally:
            recorder.close()
            print(f"hatp-recorder: run {recorder.run_id} closed, head signed", file=sys.stderr, flush=True)


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


def _head(store: RunStore, run: str, out: Path | None) -> int:
    head = store.latest_checkpoint(run) or store.checkpoint(run, "manual")
    text = json.dumps(head.wire(), indent=2)
    if out is None:
        print(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
