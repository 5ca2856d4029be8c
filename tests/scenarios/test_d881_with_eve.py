"""D-881 with Eve's edit of the deal: a conflict kept by default, overwritten only by an explicit override;
the overriding telling is also the one traced with OpenTelemetry (``--trace``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from d881_readback import (
    assert_one_cancel_per_attendee,
    deal_stage,
    play_in_process,
    play_told_in_process,
    reversal_of,
)
from opentelemetry.sdk.trace import ReadableSpan
from support.spans import spans_in_log, spans_in_this_process

from hatp_journal.scenarios.d881 import Told
from hatp_journal.servers.mailsink import read_maildir

pytestmark = pytest.mark.slow


def test_with_eve_the_deal_step_is_a_conflict_naming_her_and_the_meeting_is_still_cancelled(
    tmp_path: Path,
) -> None:
    out = play_in_process(tmp_path, eve=True)

    assert "Changed since (kept unless overridden):" in out, out
    assert "stage is now Negotiation (v14), changed by eve@acme.com" in out, out
    assert deal_stage(tmp_path) == "Negotiation"
    assert_one_cancel_per_attendee(read_maildir(tmp_path / "mail"))
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "conflicted"}
    assert "verify says ok" in out


def test_with_eve_and_an_override_the_approver_overwrites_her_change_and_the_story_is_traced_step_by_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hatp-demo d881 --eve --override --trace`: tracing rides on this telling (a D-881 run costs
    seconds); Eve's edit happens outside the Recorder, so the spans are those of the plain story."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    with spans_in_this_process() as exporter:
        out, told = play_told_in_process(tmp_path, eve=True, override=True, tracing=True)
        people = [s for s in exporter.get_finished_spans() if s.name.startswith("hatp.")]

    assert deal_stage(tmp_path) == "Proposal"
    assert reversal_of(tmp_path) == {"step 3": "notReversible", "step 2": "reversed", "step 1": "reversed"}
    assert "overwrote a newer change, by override of human://acme.com/lee" in out, out
    assert "verify says ok" in out
    assert_traced_call_by_call_and_undone_step_by_step(tmp_path, told, people)


def assert_traced_call_by_call_and_undone_step_by_step(
    workdir: Path, told: Told, people: list[ReadableSpan]
) -> None:
    """The agent's calls are spans of the Recorder's process (its console exporter writes them to the
    Recorder's log); the approvals, the plan with its checks and the undo with its compensations are
    spans of the people's commands (run in this process here, where the in-memory exporter keeps them)."""
    recorder = [s for s in spans_in_log(workdir / "recorder.log") if s["name"].startswith("hatp.")]

    calls = [s for s in recorder if s["name"] == "hatp.call"]
    # Three steps, the email held for Lee and called again once he approved.
    assert [(c["attributes"]["hatp.server"], c["attributes"]["hatp.tool"]) for c in calls] == [
        ("crm", "update_deal"),
        ("calendar", "create_event"),
        ("email", "send_email"),
        ("email", "send_email"),
    ]
    assert {c["attributes"]["hatp.run"] for c in calls} == {told.run}
    assert calls[2]["attributes"]["hatp.status"] == "pending_approval"
    assert [s["attributes"]["hatp.ask"] for s in recorder if s["name"] == "hatp.ask"] == [
        calls[2]["attributes"]["hatp.ask"]
    ]
    inside = [[s["name"] for s in recorder if s["parent_id"] == c["context"]["span_id"]] for c in calls]
    assert inside[0] == ["hatp.decide", "hatp.downstream", "hatp.append"]
    assert inside[2] == ["hatp.decide", "hatp.ask", "hatp.held"]  # held: nothing reached the server
    assert inside[3] == ["hatp.downstream", "hatp.append"]  # made on Lee's approval: no new decision

    names = [s.name for s in people]
    assert names.count("hatp.approval") == 2  # Lee's approval of the email, then of the plan
    [plan] = [s for s in people if s.name == "hatp.plan"]
    assert plan.attributes is not None
    assert plan.attributes["hatp.plan"] == told.plan_ref
    assert names.count("hatp.check") >= 2
    [undo] = [s for s in people if s.name == "hatp.undo"]
    compensations = [s for s in people if s.name == "hatp.compensate"]
    assert sorted(int(str((s.attributes or {})["hatp.step"])) for s in compensations) == [1, 2]
    assert all(s.parent is not None for s in compensations)
    assert undo.context is not None
    assert {s.context.trace_id for s in compensations if s.context} == {undo.context.trace_id}
