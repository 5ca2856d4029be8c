"""A Hypothesis state machine over calls, outside edits, compensate retries and clock moves.

It holds three promises of protocol.md §4: no compensation lands on top of an outside
edit; each token takes effect at most once; nothing takes effect after undoBy.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule
from sqlmodel import Session
from support import kv_server

from hatp_journal.toolkit import Tx
from hatp_journal.toolkit.testing import Invocation, JournalHarness
from hatp_journal.toolkit.wire import UndoAnswer, parse_wire_time

KEYS = st.sampled_from(["a", "b"])
VALUES = st.sampled_from(["1", "2", "3"])


@dataclass
class Call:
    invocation: Invocation
    key: str
    left: str
    first_done: UndoAnswer | None = None


class UndoMachine(RuleBasedStateMachine):
    calls = Bundle("calls")

    def __init__(self) -> None:
        super().__init__()
        kv_server.Knobs.raise_midway = False
        kv_server.Knobs.write_wrong_value = False
        self.directory = Path(tempfile.mkdtemp())
        self.kv = JournalHarness(*kv_server.TOOLS, store=self.directory / "kv.db")

    def teardown(self) -> None:
        self.kv.journal.engine.dispose()
        shutil.rmtree(self.directory, ignore_errors=True)

    def value(self, key: str) -> str | None:
        with Session(self.kv.journal.engine) as session:
            item = session.get(kv_server.KvItem, key)
            return item.value if item else None

    def snapshot(self) -> dict[str, str | None]:
        return {key: self.value(key) for key in ("a", "b")}

    @rule(target=calls, key=KEYS, value=VALUES)
    def agent_puts(self, key: str, value: str) -> Call:
        return Call(self.kv.call("put", key=key, value=value), key, value)

    @rule(key=KEYS, value=VALUES)
    def colleague_edits(self, key: str, value: str) -> None:
        if self.value(key) is None:
            return
        with Session(self.kv.journal.engine) as session:
            kv_server.outside_edit(Tx(session=session, now=self.kv.clock(), server="kv"), key, value, "eve")
            session.commit()

    @rule(minutes=st.integers(1, 50))
    def clock_moves(self, minutes: int) -> None:
        self.kv.clock.advance(minutes * 60)

    @rule(call=calls, retry_with_new_id=st.booleans())
    def compensate(self, call: Call, retry_with_new_id: bool) -> None:
        before = self.snapshot()
        request_id = f"attempt-{self.kv.clock().timestamp()}" if retry_with_new_id else None
        answer = self.kv.undo(call.invocation, request_id=request_id)
        after = self.snapshot()
        undo = call.invocation.journal.undo
        assert undo is not None
        assert undo.undo_by is not None

        if call.first_done is not None:
            # At most once: every later answer is the first one, and nothing moves.
            assert answer == call.first_done
            assert after == before
            return
        if answer.status == "done":
            # Only over exactly what the agent left, and only inside the window.
            assert before[call.key] == call.left
            assert self.kv.clock() <= parse_wire_time(undo.undo_by)
            call.first_done = answer
        else:
            assert after == before
            assert answer.code is not None
        if retry_with_new_id and self.kv.clock() > parse_wire_time(undo.undo_by):
            assert answer.status == "expired"

    @invariant()
    def store_holds_only_known_values(self) -> None:
        for value in self.snapshot().values():
            assert value in (None, "1", "2", "3")


UndoMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_undo_state_machine = UndoMachine.TestCase
