"""``hatp-demo``: run the project's stories against the real demo servers.

    hatp-demo d881 [--eve [--override]] [--browser [--host H] [--port P]] [--trace] [--workdir DIR]
    hatp-demo friday [--workdir DIR]

Exits 0 when the story ran to its end; otherwise prints one line on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

FAILED = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    # Imported once the arguments are read: --help should not wait for asyncio and the stories.
    import asyncio
    import tempfile

    from hatp_journal.scenarios import d881, friday

    try:
        if args.command == "friday":
            with tempfile.TemporaryDirectory(prefix="hatp-friday-") as scratch:
                asyncio.run(friday.run(args.workdir or Path(scratch) / "friday"))
        else:
            story = {"eve": args.eve, "override": args.override, "browser": args.browser}
            story["tracing"] = args.trace
            served = {"host": args.host, "port": args.port}
            if args.workdir is not None:
                asyncio.run(d881.run(args.workdir, **story, **served))
            else:
                with tempfile.TemporaryDirectory(prefix="hatp-d881-") as scratch:
                    asyncio.run(d881.run(Path(scratch) / "d881", **story, **served, kept=False))
    except Exception as error:  # noqa: BLE001 -- any failure of the story: one clear line, exit 1
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"hatp-demo {args.command}: {message}", file=sys.stderr)
        return FAILED
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hatp-demo", description="Run HATP Journal demo stories.")
    commands = parser.add_subparsers(dest="command", required=True)
    story = commands.add_parser("d881", help="the D-881 story (protocol.md §0): an agent's run and its undo")
    story.add_argument("--eve", action="store_true", help="Eve moves the deal to Negotiation before the undo")
    story.add_argument(
        "--override", action="store_true", help="with --eve: the approver overwrites Eve's change"
    )
    story.add_argument(
        "--browser",
        action="store_true",
        help="serve the approver's pages, print Lee's sign-in link, and wait for the decision made there",
    )
    story.add_argument(
        "--host", default="127.0.0.1", help="with --browser: the address the pages are served on (127.0.0.1)"
    )
    story.add_argument(
        "--port",
        type=int,
        default=0,
        help="with --browser: the port the pages are served on (0: any free one)",
    )
    story.add_argument(
        "--trace",
        action="store_true",
        help="the Recorder's OpenTelemetry spans on, exported as OTEL_TRACES_EXPORTER says",
    )
    story.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="an empty directory for stores and mail (default: a temp dir)",
    )
    week = commands.add_parser(
        "friday",
        help="reviews, reminders, an escalation and lapses for a Friday-evening run (protocol.md §12)",
    )
    week.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="an empty directory for stores and mail (default: a temp dir)",
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
