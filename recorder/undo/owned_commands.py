"""Which of ``hatp-recorder``'s commands the undo commands (:mod:`.commands`) run.

Decided without importing them: they load the MCP stack to reach tool servers, and ``approve`` or
``deny`` of an agent's call (the commonest decision) reaches none.
"""

from __future__ import annotations

import argparse

from hatp_journal.recorder.record import RunStore, UnknownRun
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.undo.approval import is_plan
from hatp_journal.recorder.undo.remedy import is_remedy


def handles(args: argparse.Namespace, store: RunStore) -> bool:
    """Whether the undo commands run ``args`` (approve/deny only when they name a plan or a remedy)."""
    if args.command in ("plan", "undo", "confirm-link", "remedy"):
        return True
    if args.command in ("approve", "deny"):
        if is_plan(store, args.ask):
            return True
        try:
            return is_remedy(Asks(store).find(args.ask))
        except (KeyError, UnknownRun):
            return False
    return False
