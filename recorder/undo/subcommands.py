"""The undo subcommands' arguments on ``hatp-recorder``'s parser (what they do is in :mod:`.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def add_undo_commands(commands: Any) -> None:
    """Register the undo subcommands on ``hatp-recorder``'s parser."""
    plan = commands.add_parser("plan", help="plan undoing a run from step N (or chosen steps), for approval")
    plan.add_argument("run")
    which = plan.add_mutually_exclusive_group(required=True)
    which.add_argument("--from", dest="from_step", type=int, help="undo step N and everything after it")
    which.add_argument("--step", dest="steps", type=int, action="append", help="undo this step (repeatable)")
    plan.add_argument("--by", required=True, help="who asks: the run's principal or an undo approver")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON instead of text")
    undo = commands.add_parser("undo", help="run (or resume) an approved plan")
    undo.add_argument("plan", help="RUN/eN, as `plan` prints it")
    link = commands.add_parser("confirm-link", help="confirm an inferred link, so the planner relies on it")
    link.add_argument("run")
    link.add_argument("entry", help="the later call, eN")
    link.add_argument("on", help="the earlier call it relied on, eM")
    link.add_argument("--as", dest="person", required=True)
    link.add_argument("--key", type=Path, required=True)
    remedy = commands.add_parser(
        "remedy", help="ask to make a remedying call for an entry that can't be undone"
    )
    remedy.add_argument("entry", help="RUN/eN of the irreversible call")
    remedy.add_argument("--call", required=True, help="server.tool of the remedy, e.g. email.send_email")
    remedy.add_argument("--arguments", default="{}", help="the remedy's arguments as a JSON object")
    remedy.add_argument("--by", required=True, help="who asks for the remedy")
