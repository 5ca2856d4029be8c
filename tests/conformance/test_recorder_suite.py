"""The Recorder checks: this project's Recorder passes; a Recorder whose verifier accepts anything,
or that cannot journal at all, fails with the right requirement ids."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import anyio

from hatp_journal.conformance import AgentCall, RecordedRun, RecordVerdict, SuiteResult, run_recorder_suite
from hatp_journal.conformance.recorder_target import RecorderUnderTest
from hatp_journal.recorder.conformance_adapter import ReferenceRecorder, reference


def suite(recorder: RecorderUnderTest) -> SuiteResult:
    return anyio.run(partial(run_recorder_suite, recorder, type(recorder).__name__))


class TrustingVerifier(ReferenceRecorder):
    """The real Recorder, with a verifier that says every record is fine."""

    def verify(self, record: bytes) -> RecordVerdict:
        return RecordVerdict(ok=True)


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
