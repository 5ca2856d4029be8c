"""`hatp-demo d881 --trace`: the story's OpenTelemetry spans as a collector gets them. The agent's
calls are spans of the Recorder's process (its console exporter writes them to the Recorder's log);
the approvals, the plan with its checks and the undo with its compensations are spans of the people's
commands (run in this process here, where the SDK's in-memory exporter keeps them)."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest
from support.spans import spans_in_log, spans_in_this_process

from hatp_journal.scenarios import d881

pytestmark = pytest.mark.slow


def test_the_d881_story_is_traced_call_by_call_and_its_undo_step_by_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    with spans_in_this_process() as exporter:
        told = anyio.run(lambda: d881.run(tmp_path, io.StringIO(), tracing=True, in_process=True))
        people = [s for s in exporter.get_finished_spans() if s.name.startswith("hatp.")]
    recorder = [s for s in spans_in_log(tmp_path / "recorder.log") if s["name"].startswith("hatp.")]

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
