"""``hatp-fakeapp serve --db PATH [--port N] [--layout a|b] [--retention-days N] [--test-controls]``."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from ._errors import StoreError
from ._host import HOST

DEFAULT_PORT = 8765


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for bad input)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports bad input itself and exits 2
        return exc.code if isinstance(exc.code, int) else 2
    if args.command != "serve":
        parser.print_usage(sys.stderr)
        return 2

    from ._runner import FakeApp  # here, not above: --help should not wait for the web server

    db = Path(args.db)
    if not db.parent.is_dir():
        return _bad_input(f"--db: directory {db.parent} does not exist")
    try:
        app = FakeApp(
            db,
            layout=args.layout,
            retention_days=args.retention_days,
            test_controls=args.test_controls,
            port=args.port,
        )
    except StoreError as exc:
        return _bad_input(f"--db: {exc}")

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # uvicorn handles SIGINT/SIGTERM while serving, then re-raises the signal it caught once it
    # has shut down; ignoring that echo lets a requested stop end with status 0.
    for sig in previous:
        signal.signal(sig, _ignore)
    try:
        app.run(announce=lambda line: print(line, flush=True))
    except OSError as exc:
        return _bad_input(f"--port: cannot listen on {HOST}:{args.port}: {exc.strerror}")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hatp-fakeapp",
        description="A small invoicing web app for testing UI undo (computer-use servers).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help=f"serve the app on {HOST} until SIGINT/SIGTERM")
    serve.add_argument("--db", required=True, help="SQLite file (created and seeded if new)")
    serve.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"0 picks a free port (default {DEFAULT_PORT})"
    )
    serve.add_argument("--layout", choices=("a", "b"), default="a", help="page layout (default a)")
    serve.add_argument(
        "--retention-days",
        type=_retention,
        default=30,
        help="days Trash keeps a deleted invoice (default 30)",
    )
    serve.add_argument(
        "--test-controls",
        action="store_true",
        help="enable the /_control API (clock, layout, colleague edits, faulty restore)",
    )
    return parser


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def _retention(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of days, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _bad_input(message: str) -> int:
    print(f"hatp-fakeapp: error: {message}", file=sys.stderr)
    return 2


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Signal handler that does nothing (see main)."""
