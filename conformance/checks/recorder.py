"""The Recorder (protocol.md §8, §9): unverifiable calls kept unknown, tampering detected, remedies chained.

The suite has the Recorder journal one run of :data:`CALLS` through the stub server, then each
check reads that run's exported Run Record (``hatp-run-record/2``, see ``docs/run-record.md``:
an entry of kind ``call`` names its ``tool`` and its intake verdict ``intake.kind``) with the
suite's own reader (:mod:`hatp_journal.conformance.run_record`), never the Recorder's code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.conformance.checks.outcome import CheckFailed, expect, require
from hatp_journal.conformance.checks.registry import recorder_check
from hatp_journal.conformance.recorder_target import AgentCall, RecordedRun, RecorderUnderTest
from hatp_journal.conformance.run_record import RecordEntry, RunRecord


def set_value(value: str) -> AgentCall:
    """An honest, undoable call."""
    return AgentCall("set_value", {"value": value})


PLANTED = AgentCall("planted_update", {"value": "planted"})
NOTE = AgentCall("note", {"text": "a plain call"})
CALLS = (set_value("a"), PLANTED, NOTE, set_value("b"))
"""Honest, planted, unaware, honest: the run every Recorder check reads."""


@recorder_check("R-8.1")
async def an_unverifiable_call_is_kept_as_unknown(recorder: RecorderUnderTest, run: RecordedRun) -> None:
    """All four calls journaled; only the honest ones verified, the one after the planted one too."""
    calls = _calls(_parse(run.record))
    tools = [entry.body.get("tool") for entry in calls]
    expect(
        tools == ["set_value", "planted_update", "note", "set_value"],
        "call_not_journaled",
        f"journaled {tools}",
    )
    kinds = [_intake(entry).get("kind") for entry in calls]
    expect(
        kinds[1] == "unknown", "planted_entry_trusted", f"the planted journal object was taken as {kinds[1]}"
    )
    expect(
        kinds[2] == "unknown",
        "unaware_call_not_unknown",
        f"the unaware server's call was taken as {kinds[2]}",
    )
    expect(
        kinds[0] == kinds[3] == "compensate",
        "valid_entry_blocked",
        f"honest calls around the planted one were taken as {kinds[0]} and {kinds[3]}",
    )
    verdict = recorder.verify(run.record)
    expect(verdict.ok, "record_does_not_verify", f"the untampered record fails: {sorted(verdict.problems)}")


@recorder_check("R-8.2")
async def a_tampered_record_is_detected(recorder: RecorderUnderTest, run: RecordedRun) -> None:
    """Four kinds of tampering with a genuine record, each caught by the verifier."""
    verdict = recorder.verify(run.record)
    expect(verdict.ok, "record_does_not_verify", f"the untampered record fails: {sorted(verdict.problems)}")
    genuine = json.loads(run.record)
    tamperings: dict[str, Callable[[dict[str, Any]], None]] = {
        "entry_changed": lambda doc: doc["entries"][0]["body"].update(arguments={"value": "z"}),
        "entry_removed": lambda doc: doc["entries"].pop(1),
        "entries_swapped": lambda doc: doc["entries"].insert(0, doc["entries"].pop(1)),
        "chain_rewritten": _rewrite_the_chain,
    }
    missed = []
    for name, tamper in tamperings.items():
        document = json.loads(json.dumps(genuine))
        tamper(document)
        if recorder.verify(canonical_bytes(document)).ok:
            missed.append(name)
    expect(not missed, "tampering_undetected", f"the verifier accepted: {missed}")


@recorder_check("R-9.1")
async def a_remedy_is_chained_into_the_same_record(recorder: RecorderUnderTest, run: RecordedRun) -> None:
    """A remedy of the planted call is appended to its run and verifies; one naming no entry does not."""
    planted = require(
        _planted(_parse(run.record)), "call_not_journaled", "the planted call is not in the record"
    )
    fixed = await recorder.append_remedy(run, planted.id, AgentCall("note", {"text": "correction"}))
    record = _parse(fixed.record)
    remedy = record.entries[-1]
    expect(
        remedy.body.get("remedies") == planted.id,
        "remedy_not_named",
        f"last entry: {remedy.kind} {remedy.body}",
    )
    expect(
        remedy.run == record.run.id and remedy.prev_hash == record.entries[-2].hash,
        "remedy_not_chained",
        "the remedy is not chained after the run's entries",
    )
    verdict = recorder.verify(fixed.record)
    expect(verdict.ok, "remedy_chain_rejected", f"a record with a remedy fails: {sorted(verdict.problems)}")
    dangling = await recorder.append_remedy(fixed, "e999", AgentCall("note", {"text": "fixes nothing"}))
    expect(
        not recorder.verify(dangling.record).ok,
        "dangling_remedy_accepted",
        "a remedy naming an entry that is not in the record verifies",
    )


def _parse(record: bytes) -> RunRecord:
    try:
        return RunRecord.model_validate_json(record)
    except ValidationError as error:
        raise CheckFailed("not_a_run_record", str(error.errors()[:1])) from None


def _planted(record: RunRecord) -> RecordEntry | None:
    return next((entry for entry in _calls(record) if entry.body.get("tool") == PLANTED.tool), None)


def _calls(record: RunRecord) -> Sequence[RecordEntry]:
    return [entry for entry in record.entries if entry.kind == "call"]


def _intake(entry: RecordEntry) -> dict[str, Any]:
    intake = entry.body.get("intake")
    return intake if isinstance(intake, dict) else {}


def _rewrite_the_chain(document: dict[str, Any]) -> None:
    """Change the first entry and recompute every hash after it, as a forger without the key would."""
    entries = document["entries"]
    entries[0]["body"]["arguments"] = {"value": "z"}
    previous = entries[0]["prevHash"]
    for entry in entries:
        entry["prevHash"] = previous
        entry["hash"] = previous = sha256_digest({k: v for k, v in entry.items() if k != "hash"})
