"""``hatp-recorder``: serve the gateway, and read, export and verify Run Records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hatp_journal.recorder.undo.subcommands import add_undo_commands


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input, 1 for a record that fails)."""
    args = parser().parse_args(argv)
    if args.command == "serve":  # lazy: its tool servers are spawned before the rest is imported
        from hatp_journal.recorder.cli.serve_start import serve as serve_command

        return serve_command(args)
    if args.command == "install":  # lazy: the config alone: quick, and no MCP stack needed
        from hatp_journal.recorder.cli.install import install as install_command

        return install_command(args)
    if args.command == "explain":  # lazy: a kept tool list, neither the MCP stack nor the store
        from hatp_journal.recorder.cli.explain_command import explain_command

        return explain_command(args)
    if args.command == "verify":  # lazy: offline, from a file: neither the gateway nor the store
        from hatp_journal.recorder.cli.verify import verify_command

        try:
            return verify_command(args)
        except Exception as error:
            from hatp_journal.recorder.cli.bad_input import said_as_bad_input  # lazy: only on failure

            if not said_as_bad_input(error):
                raise
            return 2
    # lazy: imported once the arguments are read: --help should not wait for the gateway and MCP.
    from hatp_journal.recorder.cli.commands import run

    return run(args)


def parser() -> argparse.ArgumentParser:
    """``hatp-recorder``'s arguments: each group of commands is added by its own function below."""
    parser = argparse.ArgumentParser(prog="hatp-recorder", description=__doc__)
    parser.add_argument("--config", type=Path, default=Path("recorder.toml"))
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the agent over stdio or HTTP")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--run-key",
        help="name the run: every process and connection with this key shares it (else $HATP_RUN_KEY)",
    )
    _add_install(commands)
    _add_pages_and_explain(commands)
    _add_decisions(commands)
    _add_records(commands)
    _add_verify(commands)
    return parser


def _add_install(commands: Any) -> None:
    """``install``: the entry a host needs to start this Recorder."""
    install = commands.add_parser(
        "install", help="print (or write into a host's file) the entry that starts this Recorder"
    )
    install.add_argument("client", choices=("claude-desktop", "cursor", "vscode", "claude-code"))
    install.add_argument("--name", default="hatp", help="the server's name in the host (hatp)")
    install.add_argument(
        "--write",
        nargs="?",
        const="",
        metavar="FILE",
        help="merge the entry into the host's file (its usual place, or FILE) instead of printing it",
    )
    install.add_argument("--force", action="store_true", help="with --write: replace a different entry")
    install.add_argument(
        "--run-key", help="every process the host starts for the entry continues this run ($HATP_RUN_KEY)"
    )


def _add_pages_and_explain(commands: Any) -> None:
    """``web``, ``web-link``, ``tick``, ``review`` and ``explain``."""
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
    why = commands.add_parser(
        "explain",
        help="a tool's class in words, its rule and evidence, the policy's decision, what undo exists "
        "and how to change the verdict",
    )
    why.add_argument("server")
    why.add_argument("tool")
    why.add_argument("--args", help="the call's arguments, a JSON object (for the registry's argument rules)")
    why.add_argument("--json", action="store_true", help="print the decision as JSON")
    why.add_argument(
        "--refresh",
        action="store_true",
        help="start the server and read its tool list now, not the one kept from the last connect",
    )


def _add_decisions(commands: Any) -> None:
    """``runs``, ``store-check``, ``asks``, ``approve``, ``deny`` and the undo commands."""
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
    add_undo_commands(commands)


def _add_records(commands: Any) -> None:
    """``show``, ``export``, ``head`` and ``witnesses``."""
    show = commands.add_parser("show", help="show a run's entries")
    show.add_argument("run")
    show.add_argument("--json", action="store_true", help="print the entries as stored, as JSON")
    export = commands.add_parser("export", help="write a self-contained Run Record file")
    export.add_argument("run")
    export.add_argument("--out", type=Path, required=True)
    head = commands.add_parser("head", help="print a run's latest signed head (a checkpoint, as JSON)")
    head.add_argument("run")
    head.add_argument("--out", type=Path, help="write it to this file instead")
    witnesses = commands.add_parser(
        "witnesses",
        help="list signed heads not yet cosigned by a configured witness, and why (exit 1 if any)",
    )
    witnesses.add_argument("--send", action="store_true", help="send every owed head now, then list")


def _add_verify(commands: Any) -> None:
    """``verify``: a Run Record file checked offline, with what the caller pins."""
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
    verify.add_argument(
        "--directory",
        type=Path,
        action="append",
        default=[],
        help="pin the directory decisions were made under; repeat for each of the run's moments, newest last",
    )
    verify.add_argument(
        "--head", type=Path, help="the latest signed head, held outside the Recorder (from `head`)"
    )
    verify.add_argument(
        "--witness",
        action="append",
        default=[],
        metavar="NAME=KEY",
        help="pin a witness's public key (from `hatp-witness pubkey`): the final head must carry its "
        "cosignature; repeat for each witness",
    )
    verify.add_argument(
        "--ask-witness",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="ask the witness NAME (pinned with --witness) for its latest cosigned head of the run: a "
        "truncated or forked file fails without --head",
    )
    verify.add_argument(
        "--accept-flagged",
        action="store_true",
        help="exit 0 when the only problems are flagged ones (failures the Recorder itself recorded)",
    )


if __name__ == "__main__":
    sys.exit(main())
