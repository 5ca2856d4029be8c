"""``hatp-recorder web`` (serve the approver) and ``hatp-recorder web-link --as PERSON``."""

from __future__ import annotations

import argparse
import sys

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.undo.actions import load_directory
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.web.app import WebApprover, sign_in_link
from hatp_journal.recorder.web.server import serve_forever


def run(args: argparse.Namespace, config: RecorderConfig) -> int:
    """Run ``web`` or ``web-link``; errors propagate to the CLI, which prints their code."""
    if args.command == "web-link":
        if (people := load_directory(config)).person(args.person) is None:
            raise UndoError(UndoCode.NOT_PERMITTED, people.not_listed(args.person))
        print(sign_in_link(config, args.person, now=utc_now()))
        return 0
    approver = WebApprover(config, listening=(f"{args.host}:{args.port}",))
    try:
        print(f"hatp-recorder: approver on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
        serve_forever(approver.app, args.host, args.port)
    finally:
        approver.close()
    return 0
