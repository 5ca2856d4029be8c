"""A Hypothesis state machine over append, checkpoint, close, restart and export+verify.

It holds the Run Record's promises: an untampered export always verifies; checkpoint sizes
never go down and signed checkpoints are never lost; an entry never changes once written.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule
from record_helpers import TickingClock, pins

from hatp_journal.recorder.record import Entry, RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey

KEY = SigningKey.generate()
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
BODIES = st.dictionaries(st.text(max_size=6), VALUES, max_size=4)
# Kinds whose bodies say nothing a verifier checks beyond the chain: this machine is about the chain.
KINDS = st.sampled_from(["note", "link", "seen", "refused", "withdrawn", "review"])


class RunRecordMachine(RuleBasedStateMachine):
    runs = Bundle("runs")

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp())
        self.clock = TickingClock()
        self.store = self.open_store()
        self.written: dict[str, list[Entry]] = {}
        self.signed: dict[str, list[tuple[int, str]]] = {}

    def open_store(self) -> RunStore:
        return RunStore(self.directory / "machine.db", KEY, checkpoint_every=4, clock=self.clock)

    def teardown(self) -> None:
        self.store.dispose()
        shutil.rmtree(self.directory, ignore_errors=True)

    @initialize(target=runs)
    def first_run(self) -> str:
        return self.open_run()

    @rule(target=runs)
    def open_run(self) -> str:
        run = self.store.open_run(agent="sales-bot", principal="dana")
        self.written[run.id], self.signed[run.id] = [], []
        return run.id

    @rule(run_id=runs, kind=KINDS, body=BODIES)
    def append(self, run_id: str, kind: str, body: dict[str, Any]) -> None:
        entry = self.store.append(run_id, kind, body)
        assert (entry.seq, entry.kind, entry.body) == (len(self.written[run_id]) + 1, kind, body)
        self.written[run_id].append(entry)

    @rule(run_id=runs, reason=st.sampled_from(["approval", "manual"]))
    def checkpoint(self, run_id: str, reason: str) -> None:
        checkpoint = self.store.checkpoint(run_id, reason)
        assert checkpoint.size == len(self.written[run_id])

    @rule(run_id=runs)
    def close(self, run_id: str) -> None:
        assert self.store.close_run(run_id).size == len(self.written[run_id])

    @rule()
    def restart(self) -> None:
        self.store.dispose()
        self.store = self.open_store()

    @rule(run_id=runs)
    def export_and_verify(self, run_id: str) -> None:
        record = self.store.export(run_id)
        report = verify_record(record.to_bytes(), recorder_keys=pins(self.store))
        assert report.ok, report.problems
        assert record.entries == self.written[run_id]
        assert record.checkpoints[-1].size == len(self.written[run_id])

    @invariant()
    def entries_never_change_and_sizes_never_go_down(self) -> None:
        for run_id, written in self.written.items():
            assert self.store.entries(run_id) == written
            signed = [(c.size, c.head) for c in self.store.checkpoints(run_id)]
            assert signed[: len(self.signed[run_id])] == self.signed[run_id]
            assert [size for size, _ in signed] == sorted(size for size, _ in signed)
            assert all(head == (written[size - 1].hash if size else head) for size, head in signed)
            self.signed[run_id] = signed


TestRunRecordMachine = RunRecordMachine.TestCase
TestRunRecordMachine.settings = settings(max_examples=15, stateful_step_count=12, deadline=None)
