"""Undo as a decision (protocol.md §9): links, Reversal Plans, approval, execution, Reversal Records,
remedies."""

from typing import TYPE_CHECKING

from hatp_journal._shared.lazy import lazy_exports

if TYPE_CHECKING:
    from hatp_journal.recorder.changes.links import Link, LinkIndex, dependencies
    from hatp_journal.recorder.changes.plan import ReversalPlan, plan_schema, plan_text, undo_label
    from hatp_journal.recorder.changes.steps import Step, steps_of
    from hatp_journal.recorder.undo.approval import PlanAsk, decide_plan, find_plan, record_plan
    from hatp_journal.recorder.undo.errors import UndoCode, UndoError
    from hatp_journal.recorder.undo.execute import CompensateUnavailable, execute_plan
    from hatp_journal.recorder.undo.planner import CheckUnavailable, PlannedUndo, UndoRequest, build_plan
else:  # imported on first use, so that a command's --help stays quick (_shared/lazy.py)
    __getattr__ = lazy_exports(
        __name__,
        {
            "hatp_journal.recorder.undo.approval": ["PlanAsk", "decide_plan", "find_plan", "record_plan"],
            "hatp_journal.recorder.undo.errors": ["UndoCode", "UndoError"],
            "hatp_journal.recorder.undo.execute": ["CompensateUnavailable", "execute_plan"],
            "hatp_journal.recorder.changes.links": ["Link", "LinkIndex", "dependencies"],
            "hatp_journal.recorder.changes.plan": ["ReversalPlan", "plan_schema", "plan_text", "undo_label"],
            "hatp_journal.recorder.undo.planner": [
                "CheckUnavailable",
                "PlannedUndo",
                "UndoRequest",
                "build_plan",
            ],
            "hatp_journal.recorder.changes.steps": ["Step", "steps_of"],
        },
    )

__all__ = [
    "CheckUnavailable",
    "CompensateUnavailable",
    "Link",
    "LinkIndex",
    "PlanAsk",
    "PlannedUndo",
    "ReversalPlan",
    "Step",
    "UndoCode",
    "UndoError",
    "UndoRequest",
    "build_plan",
    "decide_plan",
    "dependencies",
    "execute_plan",
    "find_plan",
    "plan_schema",
    "plan_text",
    "record_plan",
    "steps_of",
    "undo_label",
]
