"""``hatp-mailsink``: run the mail sink, and list or show what it received.

    hatp-mailsink serve --dir DIR [--host HOST] [--port N] [--no-checkpoint]
    hatp-mailsink list  --dir DIR
    hatp-mailsink show  --dir DIR N        (N as numbered by ``list``, from 1)
    hatp-mailsink resent --dir DIR         (each Message-ID a recipient got more than once)

Usage errors (unknown directory, bad message number) print a message on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._maildir import DeliveredMessage

USAGE_ERROR = 2
RUNTIME_ERROR = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    from ._maildir import read_maildir  # here, not above: --help should not wait for the mail libraries

    try:
        if args.command == "serve":
            return _serve(args.dir, args.host, args.port, checkpoint=args.checkpoint)
        messages = read_maildir(args.dir)
        if args.command == "list":
            _list(messages)
            return 0
        if args.command == "resent":
            _resent(messages)
            return 0
        return _show(messages, args.number)
    except FileNotFoundError as exc:
        print(f"hatp-mailsink: {exc}", file=sys.stderr)
        return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hatp-mailsink", description="A local SMTP sink that stores mail in a Maildir."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="receive mail until interrupted")
    serve.add_argument("--dir", type=Path, required=True, help="Maildir (created if missing)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port (the default)")
    serve.add_argument(
        "--no-checkpoint",
        dest="checkpoint",
        action="store_false",
        help="don't offer CHECKPOINT (RFC 1845): a sender's restart of a stored message is a second copy",
    )
    listing = commands.add_parser("list", help="one line per stored message")
    listing.add_argument("--dir", type=Path, required=True)
    show = commands.add_parser("show", help="print one stored message")
    show.add_argument("--dir", type=Path, required=True)
    show.add_argument("number", type=int, help="message number as shown by list")
    resends = commands.add_parser(
        "resent", help="one line per Message-ID a recipient got more than once (a sender's resend)"
    )
    resends.add_argument("--dir", type=Path, required=True)
    return parser


def _serve(directory: Path, host: str, port: int, *, checkpoint: bool) -> int:
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    from ._server import MailSink, log

    # A server's log: one line per restart recognised (the names in it are checked printable ASCII).
    log.addHandler(logging.StreamHandler(sys.stdout))
    log.setLevel(logging.INFO)
    sink = MailSink(directory, host=host, port=port, checkpoint=checkpoint)
    try:
        sink.start()
    except OSError as exc:
        print(f"hatp-mailsink: cannot start on {host}:{port}: {exc}", file=sys.stderr)
        return RUNTIME_ERROR
    try:
        print(f"listening on {sink.host}:{sink.port}", flush=True)
        stop.wait()
    finally:
        sink.stop()
    return 0


def _list(messages: list[DeliveredMessage]) -> None:
    for number, delivered in enumerate(messages, start=1):
        columns = [
            str(number),
            delivered.envelope_from or "<>",
            ",".join(delivered.envelope_to),
            delivered.subject,
            delivered.calendar_method or "-",
        ]
        print("\t".join(columns))


def _resent(messages: list[DeliveredMessage]) -> None:
    from ._maildir import resent

    for resend in resent(messages):
        envelope_ids = ",".join(sorted({envid or "-" for envid in resend.envelope_ids}))
        numbers = ",".join(str(number) for number in resend.numbers)
        print("\t".join([resend.message_id, resend.recipient, numbers, envelope_ids]))


def _show(messages: list[DeliveredMessage], number: int) -> int:
    if not 1 <= number <= len(messages):
        held = f"the Maildir holds {len(messages)}, numbered from 1"
        print(f"hatp-mailsink: no message {number}: {held}", file=sys.stderr)
        return USAGE_ERROR
    text = messages[number - 1].raw.decode("utf-8", "replace")
    sys.stdout.write(text.replace("\r\n", "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
