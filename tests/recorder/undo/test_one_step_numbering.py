"""A step has one number wherever it is read: the plan on the terminal, the pages, the Reversal Record.

Read from the D-881 Run Record in docs/examples (plan e6, Reversal Record e12): the kickoff is step 2,
the deal step 1 and the email step 3, the run's 2nd, 1st and 3rd calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hatp_journal.recorder.changes.plan import ReversalPlan, plan_text
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo.commands import reversal_text

RECORD = Path(__file__).parents[3] / "docs" / "examples" / "d881" / "run-record.json"


def entry(entry_id: str) -> Entry:
    entries = json.loads(RECORD.read_text(encoding="utf-8"))["entries"]
    return Entry.model_validate(next(e for e in entries if e["id"] == entry_id))


def numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\bstep (\d+)\b", text)]


def test_the_terminal_plan_and_the_reversal_record_number_the_steps_alike() -> None:
    plan = ReversalPlan.model_validate(entry("e6").body["plan"])
    calls = [e.id for e in map(entry, ["e1", "e2", "e5"])]

    shown = plan_text(plan, agent="sales-bot", principal="Dana")
    recorded = reversal_text(entry("e12"))

    assert numbers(shown) == [2, 1, 3]
    assert sorted(numbers(recorded)) == [1, 2, 3]
    # step N is the run's N-th call, the number the pages show as "Step N"
    assert {s.step: s.entry for s in [*plan.steps, *plan.not_reversible]} == {
        1: calls[0],
        2: calls[1],
        3: calls[2],
    }
