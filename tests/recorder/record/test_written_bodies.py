"""The bodies the Recorder writes come from models, and give exactly the JSON written before them.

Every body of the D-881 Run Record in docs/examples (written before the models) is rebuilt through its
kind's model and must give the same canonical bytes; fixed inputs pin what an absent member and a
``null`` one write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import IntentAsSent, OutcomeAsSent, OwnBodyUnreadable, read_own
from hatp_journal.recorder.record.written_bodies import (
    AskTerms,
    CallDecisionRecord,
    CallRecord,
    HaltedRecord,
    HostUndoRecord,
    IntentRecord,
    OutcomeRecord,
    OverrideChoice,
    PlanDecisionRecord,
    PlanRecord,
    RefusedRecord,
    ReversalLineRecord,
    ReversalRecord,
    SignedOverride,
    Written,
)

RECORD = Path(__file__).parents[3] / "docs" / "examples" / "d881" / "run-record.json"
ENTRIES = json.loads(RECORD.read_text(encoding="utf-8"))["entries"]
MODELS: dict[str, type[Written]] = {
    "call": CallRecord,
    "plan": PlanRecord,
    "undo-intent": IntentRecord,
    "undo-outcome": OutcomeRecord,
    "reversal": ReversalRecord,
}


def rebuilt(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` through the model its kind is written with, as the writer builds it."""
    if kind == "ask":
        terms = AskTerms.model_validate({k: body[k] for k in ("callDigest", "approver", "decideBy")})
        call = CallRecord.model_validate({k: v for k, v in body.items() if k not in terms.wire()})
        return {**call.wire(), **terms.wire()}
    if kind == "decision" and "ask" in body:
        return CallDecisionRecord.model_validate(body).wire()
    if kind == "decision" and "plan" in body:
        overrides = [SignedOverride.model_validate(o).wire() for o in body.get("overrides", [])]
        return PlanDecisionRecord.model_validate(
            {**body, "overrides": overrides or body.get("overrides")}
        ).wire()
    if kind == "reversal":
        lines = [ReversalLineRecord.model_validate(line).wire() for line in body["steps"]]
        return ReversalRecord.model_validate({**body, "steps": lines}).wire()
    return MODELS[kind].model_validate(body).wire()


@pytest.mark.parametrize(
    "entry",
    [e for e in ENTRIES if e["kind"] in {*MODELS, "ask", "decision"}],
    ids=lambda e: f"{e['id']}-{e['kind']}",
)
def test_a_body_written_before_the_models_comes_out_of_its_model_byte_for_byte(entry: dict[str, Any]) -> None:
    assert canonical_bytes(rebuilt(entry["kind"], entry["body"])) == canonical_bytes(entry["body"])


def test_every_kind_the_recorder_writes_for_undo_is_in_the_example_record() -> None:
    assert {e["kind"] for e in ENTRIES} >= {*MODELS, "decision"}


def test_a_call_without_a_journal_object_records_null_and_an_absent_member_is_left_out() -> None:
    call = CallRecord.model_construct(
        agent="bot", principal="p", server="s", tool="t", arguments={"note": None}, journal=None, host=None
    )

    assert call.wire() == {
        "agent": "bot",
        "principal": "p",
        "server": "s",
        "tool": "t",
        "arguments": {"note": None},
        "journal": None,
    }


def test_an_override_of_a_step_whose_version_was_not_found_signs_a_null_version() -> None:
    override = OverrideChoice(
        plan="run/e6", plan_digest="sha256:x", step="e1", version_found=None, by="lee", at="t"
    )

    assert SignedOverride(override=override.wire(), receipt={"sig": "s"}).wire() == {
        "override": {
            "plan": "run/e6",
            "planDigest": "sha256:x",
            "step": "e1",
            "versionFound": None,
            "by": "lee",
            "at": "t",
        },
        "receipt": {"sig": "s"},
    }


def test_a_refusal_keeps_what_it_was_given_and_nothing_else() -> None:
    refused = RefusedRecord.model_validate(
        {"agent": "bot", "principal": "p", "tool": "t", "code": "UNKNOWN_TOOL", "argumentsDigest": None}
    )

    assert refused.wire() == {"agent": "bot", "principal": "p", "tool": "t", "code": "UNKNOWN_TOOL"}


def test_an_outcome_without_an_answer_says_why_and_a_line_to_retry_says_so() -> None:
    outcome = OutcomeRecord.model_construct(
        plan="e6", step="e2", intent="e8", server="calendar", attempt=2, failed="gone"
    )
    line = ReversalLineRecord.model_construct(
        step=2, entry="e2", summary="s", status="failed", undo="u", retry=True
    )

    assert outcome.wire() == {
        "plan": "e6",
        "step": "e2",
        "intent": "e8",
        "server": "calendar",
        "attempt": 2,
        "failed": "gone",
    }
    assert line.wire() == {
        "step": 2,
        "entry": "e2",
        "summary": "s",
        "status": "failed",
        "undo": "u",
        "retry": True,
    }


def test_an_undo_step_body_of_the_wrong_shape_is_refused_with_a_stable_code() -> None:
    good = Entry.model_validate(next(e for e in ENTRIES if e["kind"] == "undo-intent"))
    edited = good.model_copy(update={"body": {**good.body, "request": "not an object"}})

    assert read_own(IntentAsSent, good).request == good.body["request"]
    with pytest.raises(OwnBodyUnreadable) as refused:
        read_own(OutcomeAsSent, edited.model_copy(update={"body": {"plan": "e6"}}))
    assert refused.value.code == "BODY_UNREADABLE"
    with pytest.raises(OwnBodyUnreadable):
        read_own(IntentAsSent, edited)


def test_a_halt_before_the_undo_started_records_a_null_step_and_a_host_state_may_be_null() -> None:
    halted = HaltedRecord(
        plan="e6",
        code="APPROVER_NO_LONGER_AUTHORIZED",
        by="lee",
        decision="e7",
        check="role",
        reason="r",
        before=None,
    )
    host = HostUndoRecord.model_construct(server="fs", tool="write_file", after="sha256:x", after_state=None)

    assert halted.wire()["before"] is None
    assert host.wire() == {"server": "fs", "tool": "write_file", "after": "sha256:x", "afterState": None}
    assert HostUndoRecord(failed="why").wire() == {"failed": "why"}
