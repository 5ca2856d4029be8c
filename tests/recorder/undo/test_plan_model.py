"""The Reversal Plan's wire form: published schema, labels people read, and the text for protocol.md §0."""

from __future__ import annotations

from pathlib import Path

from hatp_journal.recorder.changes.plan import NotReversible, UndoStep
from hatp_journal.recorder.undo import ReversalPlan, plan_schema, plan_text, undo_label
from hatp_journal.toolkit.schema import render

SCHEMA = Path(__file__).parents[3] / "docs" / "schema" / "reversal-plan.schema.json"


def test_the_committed_reversal_plan_schema_equals_the_code() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == render(plan_schema()), (
        "docs/schema/reversal-plan.schema.json drifted; run `make schema`"
    )


def test_undoing_a_change_swaps_its_sides_and_a_creation_becomes_a_cancellation() -> None:
    assert undo_label("Deal D-881 stage: Proposal → Won") == "Deal D-881 stage: Won → Proposal"
    assert undo_label('Create "Kickoff with Globex" on Nov 4') == 'Cancel "Kickoff with Globex" on Nov 4'
    assert undo_label("Publish a") == "Undo: Publish a"
    assert undo_label("Add task 3") == "Remove task 3"
    assert undo_label("Delete task 3") == "Restore task 3"
    assert undo_label("Remove task 3 from the board") == "Restore task 3 from the board"
    assert undo_label("Address book updated") == "Undo: Address book updated"  # a word, not a prefix


def test_the_d881_plan_reads_exactly_as_spec_section_0() -> None:
    common = {"server": "x", "tool": "t"}
    plan = ReversalPlan(
        run="run_1",
        agent="sales-bot",
        principal="human://acme.com/dana",
        requested_by="human://acme.com/dana",
        request="from 1",
        through="e5",
        undo_authority="human://acme.com/role/team-lead",
        steps=[
            UndoStep(
                step=2,
                entry="e2",
                summary='Create "Kickoff with Globex" on Nov 4',
                undo='Cancel "Kickoff with Globex" on Nov 4',
                side_effects=["attendees get a cancellation notice"],
                **common,
            ),
            UndoStep(
                step=1,
                entry="e1",
                summary="Deal D-881 stage: Proposal → Won",
                undo="Deal D-881 stage: Won → Proposal",
                **common,
            ),
        ],
        not_reversible=[
            NotReversible(
                step=3,
                entry="e5",
                summary="Email to buyer@globex.com",
                kind="none",
                reason="delivered to external recipients",
                remedy="send a correction email",
                **common,
            )
        ],
        unrecorded_memory="sales-bot: …",
    )

    assert plan_text(plan, agent="sales-bot", principal="Dana") == (
        "Undo 2 actions by sales-bot for Dana:\n"
        '  step 2  Cancel "Kickoff with Globex" on Nov 4   (attendees get a cancellation notice)\n'
        "  step 1  Deal D-881 stage: Won → Proposal\n"
        "Cannot be undone:\n"
        "  step 3  Email to buyer@globex.com   "
        "(delivered to external recipients; suggested remedy: send a correction email)"
    )
    assert plan.digest() == ReversalPlan.model_validate(plan.wire()).digest()
