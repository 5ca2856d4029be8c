"""The Recorder checks: this project's Recorder passes; a Recorder whose verifier accepts or refuses
anything, that misjudges a call, drops one, exports something else than a Run Record, chains a
remedy wrongly or cannot journal at all, fails with the right requirement ids and problems."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from functools import partial
from typing import Any
from unittest.mock import patch

import anyio
import pytest

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.conformance import AgentCall, RecordedRun, RecordVerdict, SuiteResult, run_recorder_suite
from hatp_journal.conformance.recorder_target import RecorderUnderTest
from hatp_journal.recorder.gateway import core as gateway
from hatp_journal.recorder.gateway.conformance_adapter import ReferenceRecorder, reference
from hatp_journal.recorder.intake.journal_objects import Intake, take_in


def suite(recorder: RecorderUnderTest) -> SuiteResult:
    return anyio.run(partial(run_recorder_suite, recorder, type(recorder).__name__))


class TrustingVerifier(ReferenceRecorder):
    """The real Recorder, with a verifier that says every record is fine."""

    def verify(self, record: bytes) -> RecordVerdict:
        return RecordVerdict(ok=True)


class RefusingVerifier(ReferenceRecorder):
    """The real Recorder, with a verifier that says every record is broken."""

    def verify(self, record: bytes) -> RecordVerdict:
        return RecordVerdict(ok=False, problems=frozenset({"DISTRUSTED"}))


class Misjudges(ReferenceRecorder):
    """The real Recorder, except that its intake takes ``tool``'s first call as ``kind``: a genuine,
    signed record of the wrong verdict. (Journaling the run again with that body changed would not
    do: each receipt is bound to the run it was issued in.)"""

    def __init__(self, tool: str, kind: str) -> None:
        super().__init__()
        self.tool, self.kind = tool, kind

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        changed = False

        def misjudged(meta: Any, **facts: Any) -> Intake:
            nonlocal changed
            intake = take_in(meta, **facts)
            if facts["tool"] != self.tool or changed:
                return intake
            changed = True
            return dataclasses.replace(intake, kind=self.kind)  # type: ignore[arg-type]

        with patch.object(gateway, "take_in", misjudged):
            return await super().journal_calls(server, calls)


class DropsAPlantedCall(ReferenceRecorder):
    """A Recorder that forwards the planted call without journaling it."""

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        return await super().journal_calls(server, [call for call in calls if call.tool != "planted_update"])


class ExportsSomethingElse(ReferenceRecorder):
    """A Recorder whose export is JSON but no Run Record."""

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        run = await super().journal_calls(server, calls)
        return RecordedRun(b'{"entries": "none"}', run.handle)


class RemedyNamesNothing(ReferenceRecorder):
    """A Recorder that journals a remedy without saying which entry it remedies."""

    async def append_remedy(self, run: RecordedRun, fixes: str, remedy: AgentCall) -> RecordedRun:
        store, run_id = run.handle
        store.append(run_id, "remedy", {"server": "stub", "tool": remedy.tool, "arguments": remedy.arguments})
        return RecordedRun(store.export(run_id).to_bytes(), run.handle)


class RemedyOffTheChain(ReferenceRecorder):
    """A Recorder whose exported remedy points back to the run's first entry, not its last."""

    async def append_remedy(self, run: RecordedRun, fixes: str, remedy: AgentCall) -> RecordedRun:
        appended = await super().append_remedy(run, fixes, remedy)
        document = json.loads(appended.record)
        document["entries"][-1]["prevHash"] = document["entries"][0]["hash"]
        return RecordedRun(canonical_bytes(document), appended.handle)


class CannotJournal(ReferenceRecorder):
    """A Recorder that fails before journaling anything."""

    async def journal_calls(self, server: Sequence[str], calls: Sequence[AgentCall]) -> RecordedRun:
        raise ConnectionError("the downstream could not be started")


def test_this_projects_recorder_passes_every_recorder_check() -> None:
    result = suite(reference())

    assert [(o.requirement, o.outcome) for o in result.outcomes] == [
        ("R-8.1", "passed"),
        ("R-8.2", "passed"),
        ("R-9.1", "passed"),
    ]
    assert result.passed
    assert result.kind == "recorder"


def test_a_verifier_that_accepts_anything_misses_tampering_and_dangling_remedies() -> None:
    result = suite(TrustingVerifier())

    assert {(o.requirement, o.problem) for o in result.failed()} == {
        ("R-8.2", "tampering_undetected"),
        ("R-9.1", "dangling_remedy_accepted"),
    }


def test_a_recorder_that_cannot_journal_fails_every_recorder_check() -> None:
    result = suite(CannotJournal())

    assert {(o.requirement, o.problem) for o in result.failed()} == {
        ("R-8.1", "journal_failed"),
        ("R-8.2", "journal_failed"),
        ("R-9.1", "journal_failed"),
    }


def test_a_verifier_that_refuses_everything_rejects_the_genuine_record_and_its_remedy() -> None:
    result = suite(RefusingVerifier())

    assert {(o.requirement, o.problem) for o in result.failed()} == {
        ("R-8.1", "record_does_not_verify"),
        ("R-8.2", "record_does_not_verify"),
        ("R-9.1", "remedy_chain_rejected"),
    }


@pytest.mark.parametrize(
    ("tool", "kind", "problem"),
    [
        ("planted_update", "compensate", "planted_entry_trusted"),
        ("note", "none", "unaware_call_not_unknown"),
        ("set_value", "unknown", "valid_entry_blocked"),
    ],
)
def test_a_recorder_that_misjudges_one_call_fails_r_8_1_with_that_call_s_problem(
    tool: str, kind: str, problem: str
) -> None:
    result = suite(Misjudges(tool, kind))

    assert {(o.requirement, o.problem) for o in result.failed()} == {("R-8.1", problem)}


def test_a_recorder_that_drops_the_planted_call_fails_every_check_that_looks_for_it() -> None:
    result = suite(DropsAPlantedCall())

    assert {(o.requirement, o.problem) for o in result.failed()} == {
        ("R-8.1", "call_not_journaled"),
        ("R-9.1", "call_not_journaled"),
    }


def test_an_export_that_is_no_run_record_fails_every_recorder_check() -> None:
    result = suite(ExportsSomethingElse())

    assert {(o.requirement, o.problem) for o in result.failed()} == {
        ("R-8.1", "not_a_run_record"),
        ("R-8.2", "record_does_not_verify"),
        ("R-9.1", "not_a_run_record"),
    }


def test_a_remedy_that_names_no_entry_or_leaves_the_chain_fails_r_9_1() -> None:
    unnamed, unchained = suite(RemedyNamesNothing()), suite(RemedyOffTheChain())

    assert {(o.requirement, o.problem) for o in unnamed.failed()} == {("R-9.1", "remedy_not_named")}
    assert {(o.requirement, o.problem) for o in unchained.failed()} == {("R-9.1", "remedy_not_chained")}
