"""A Hypothesis state machine over agent calls, outside edits, approvals, undo requests, crashes
and clock moves, checking after every step:

- no compensation replaces a human's write unless the approver overrode that step;
- each compensation token is compensated at most once;
- every resource an undo touched is back to its state before the run, or a step on it is reported;
- nothing the policy holds for approval happens before it is approved;
- the Run Record verifies;
- no compensation happens after its step's ``undoBy``;
- the agent's own writes to one key (create, edit, remove, create again) are one chain: an undo
  plans a conflict only on a key someone else wrote (Eve, or an earlier undo).

Everything is real but in one process: the chain server is reached by the Recorder and the
undo over MCP's in-memory transport, with SQLite files for every store.

CI runs a fixed (derandomized) set of examples and checks that they reached the undo paths that
matter (a conflict, an override, a crash and its resume, an approved publish); the longer profile,
random examples by the thousand, is ``bench/reversal_machine.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, currently_in_test_context, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)
from support.chain_server import build, outside_edit, published, undo_rows, uri, values
from support.undo_org import DANA, LEAD, LEE

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.recorder.changes.plan import ReversalPlan
from hatp_journal.recorder.changes.steps import Step
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import verify_record
from hatp_journal.recorder.testing import RecorderWorld
from hatp_journal.recorder.undo import (
    UndoError,
    UndoRequest,
    build_plan,
    decide_plan,
    execute_plan,
    record_plan,
)
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.testing import FakeClock

pytestmark = pytest.mark.slow

KEYS = st.sampled_from(["a", "b", "c"])
POLICY = {
    "autonomy": {"compensate": "allow", "read": "allow", "none": "ask", "unknown": "ask", "approver": LEAD},
    "undoAuthority": LEAD,
}


REACHED: Counter[str] = Counter()
"""How often the examples reached each path that matters (the test and the bench read it)."""


def reached(path: str) -> None:
    REACHED[path] += 1
    if currently_in_test_context():  # not in the fixed story below
        event(path)  # shown by ``--hypothesis-show-statistics``


class Crash(Exception):
    """The Recorder dies here: nothing after this point of the undo happens in this process."""


class World:
    """The Recorder, the chain server and the people, opened inside a blocking portal's loop."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = FakeClock()
        self.lee = SigningKey.generate()
        person = {"id": LEE, "roles": [LEAD], "publicKey": b64url(self.lee.public.raw())}
        self.directory = Directory.model_validate({"people": [person]})
        self.policy = Policy.model_validate(POLICY)
        self.server, self.journal = build(root / "chain.db", SigningKey.generate(), clock=self.clock)
        self.crashed: str | None = (
            None  # the crash the last undo survived (events are told in the test's thread)
        )

    async def open(self) -> None:
        self.world = await RecorderWorld.open(
            self.root, {"chain": self.server}, self.policy, principal=DANA, clock=self.clock
        )
        self.recorder, self.store, self.agent = self.world.recorder, self.world.store, self.world.agent
        self.recorder.own_run()  # opened now so that every invariant has a run to read, even before a call
        self.servers = UndoServers(self.world.config, self.store, self.world.stack, {"chain": self.server})

    async def close(self) -> None:
        try:
            await self.world.close()
        finally:
            self.journal.engine.dispose()

    @property
    def run(self) -> str:
        return self.world.run

    async def call(
        self, tool: str, arguments: dict[str, Any], *, refused: bool = False
    ) -> tuple[dict[str, Any], str | None]:
        """The agent's call: (what it was told, the entry that journaled it, if it was made)."""
        result = await self.agent.call_tool_mcp(tool, arguments)
        assert bool(result.is_error) == refused, result.content
        entry = ((result.meta or {}).get("hatp/recorder") or {}).get("entry")
        return dict(result.structured_content or {}), entry

    async def undo(
        self, from_step: int, override: bool, crash_at: int | None, after_call: bool
    ) -> ReversalPlan:
        """Plan, approve and run an undo (resumed once if it crashes); the plan as approved."""
        request = UndoRequest(from_step=from_step)
        self.crashed = None

        async def plan() -> Any:
            return await build_plan(
                self.store,
                self.run,
                request,
                requested_by=DANA,
                undo_authority=LEAD,
                check=self.servers.check,
                now=self.clock(),
            )

        planned = await plan()
        ask = record_plan(self.store, planned, now=self.clock(), within=None)
        chosen = [c.entry for c in planned.plan.conflicts] if override else []
        decided = decide_plan(
            self.store,
            ask.ref,
            "approve",
            person=LEE,
            key=self.lee,
            directory=self.directory,
            undo_authority=LEAD,
            fresh=(await plan()).plan,
            overrides=chosen,
            now=self.clock(),
        )
        assert decided.counted, decided.message
        calls = 0

        async def crashing(step: Step, request: dict[str, Any]) -> dict[str, Any]:
            nonlocal calls
            calls += 1
            if calls == crash_at and not after_call:
                raise Crash
            answer = await self.servers.compensate(step, request)
            if calls == crash_at:
                raise Crash  # the server compensated, but the Recorder never heard
            return answer

        async def replan() -> Any:
            return (await plan()).plan

        def authority() -> tuple[Directory, Policy]:
            return self.directory, self.policy

        try:
            await execute_plan(self.store, ask.ref, compensate=crashing, replan=replan, authority=authority)
        except Crash:
            self.crashed = "an undo crashed after its server compensated" if after_call else "an undo crashed"
            await execute_plan(
                self.store, ask.ref, compensate=self.servers.compensate, replan=replan, authority=authority
            )
        return planned.plan


@contextmanager
def world_in_portal() -> Iterator[tuple[World, BlockingPortal]]:
    with tempfile.TemporaryDirectory() as scratch, start_blocking_portal() as portal:
        world = World(Path(scratch))
        portal.call(world.open)
        try:
            yield world, portal
        finally:
            portal.call(world.close)


class UndoMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._context = world_in_portal()
        self.world, self.portal = self._context.__enter__()
        self.human_values: set[str] = set()
        self.pending: list[str] = []  # asks (entry ids) the agent is waiting on
        self.approved = 0  # publishes a person approved and the agent then made
        self.edits = 0
        self.value_before: dict[str, str | None] = {}  # call entry → its key's value just before
        self.others_wrote: set[str] = set()  # keys Eve edited, or an earlier undo changed

    def calls(self) -> int:
        return sum(e.kind == "call" for e in self.world.store.entries(self.world.run))

    def agent_writes(self, tool: str, arguments: dict[str, str]) -> None:
        before = values(self.world.root / "chain.db").get(arguments["key"])
        _, entry = self.portal.call(self.world.call, tool, arguments)
        assert entry is not None
        # The same write again within the retry window is a retry: it names the first call's
        # entry and writes nothing, so the value before stays the first call's.
        self.value_before.setdefault(entry, before)

    def teardown(self) -> None:
        self._context.__exit__(None, None, None)

    # -- the agent -------------------------------------------------------------------------

    @rule(key=KEYS, value=st.sampled_from(["1", "2", "3"]))
    def agent_puts(self, key: str, value: str) -> None:
        self.agent_writes("chain_put", {"key": key, "value": value})

    @rule(key=KEYS, onto=KEYS)
    def agent_attaches(self, key: str, onto: str) -> None:
        if key != onto:
            self.agent_writes("chain_attach", {"key": key, "target": onto})

    @rule(key=KEYS)
    def agent_removes(self, key: str) -> None:
        if key in values(self.world.root / "chain.db"):  # a removed key is in the bin, not shown
            self.agent_writes("chain_remove", {"key": key})

    @rule(key=KEYS)
    def agent_writes_a_key_twice_and_removes_it(self, key: str) -> None:
        """A chain of the run's own writes in a row (the single-write rules make longer ones)."""
        self.agent_writes("chain_put", {"key": key, "value": "draft"})
        self.agent_writes("chain_put", {"key": key, "value": "final"})
        self.agent_writes("chain_remove", {"key": key})

    @rule(key=KEYS)
    def agent_publishes(self, key: str) -> None:
        result = self.portal.call(self.world.agent.call_tool_mcp, "chain_publish", {"key": key})
        if result.is_error:
            # The same call's earlier ask passed its deadline (time_passes): the agent is told so
            # once; that ask stays in ``pending``, where Lee's late approval is not counted.
            told = (result.meta or {}).get("hatp/recorder") or {}
            assert told.get("code") == "DEADLINE_EXCEEDED", result.content
            return
        if ((result.meta or {}).get("hatp/recorder") or {}).get("replayed"):
            # Publishing again right after Lee's approved publish is a retry: it gets that answer
            # and publishes nothing (nothing_held_for_approval_happened_before_it counts).
            return
        answer = dict(result.structured_content or {})
        assert answer["status"] == "pending_approval"
        if answer["ask"] not in self.pending:  # asking again while pending names the same ask
            self.pending.append(str(answer["ask"]))

    @precondition(lambda self: bool(self.pending))
    @rule()
    def lee_approves_and_the_agent_calls_again(self) -> None:
        ask = self.pending.pop(0)
        asks = self.world.recorder.asks
        outcome = asks.decide(
            f"{self.world.run}/{ask}",
            "approve",
            person=LEE,
            key=self.world.lee,
            directory=self.world.directory,
            now=self.world.clock(),
        )
        entry = self.world.store.entry(self.world.run, ask)
        arguments = entry.body["arguments"]
        if outcome.counted:
            answer, _ = self.portal.call(self.world.call, "chain_publish", arguments)
            assert "published" in answer, answer
            self.approved += 1
            reached("an approved publish was made")
        else:
            reached(
                "an approval came after the deadline"
            )  # the deadline passed first (time_passes): the agent is told it was not approved
            answer, _ = self.portal.call(partial(self.world.call, refused=True), "chain_publish", arguments)
            assert answer["code"] == "DEADLINE_EXCEEDED", answer

    # -- the world around it ---------------------------------------------------------------

    @rule(key=KEYS)
    def eve_edits(self, key: str) -> None:
        if key in values(self.world.root / "chain.db"):
            self.edits += 1
            self.others_wrote.add(uri(key))
            value = f"eve-{self.edits}"
            self.human_values.add(value)
            outside_edit(self.world.root / "chain.db", key, value, by="eve")

    @rule(minutes=st.integers(min_value=1, max_value=50))
    def time_passes(self, minutes: int) -> None:
        self.world.clock.advance(timedelta(minutes=minutes))

    # -- undo ------------------------------------------------------------------------------

    @rule(
        data=st.data(),
        override=st.booleans(),
        crash_at=st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
        after_call=st.booleans(),
    )
    def dana_undoes_and_lee_approves(
        self, data: st.DataObject, override: bool, crash_at: int | None, after_call: bool
    ) -> None:
        calls = self.calls()
        if not calls:
            return
        start = data.draw(st.integers(min_value=1, max_value=calls), label="from step")
        self.undo_from(start, override, crash_at, after_call)

    def undo_from(self, start: int, override: bool, crash_at: int | None, after_call: bool) -> None:
        try:
            plan = self.portal.call(self.world.undo, start, override, crash_at, after_call)
        except UndoError as error:
            raise AssertionError(f"a fresh plan was refused: {error}") from error
        # Where nobody else wrote, whatever the run did to a key (create, edit, remove, create
        # again) is the run's own chain: undoing it is never a conflict.
        assert {c.resource for c in plan.conflicts} <= self.others_wrote, plan.conflicts
        reached("an undo ran")
        if self.world.crashed:
            reached(self.world.crashed)
        if plan.conflicts:
            reached("an undo overrode a conflict" if override else "an undo planned a conflict")
        self.others_wrote |= {s.resource for s in plan.steps if s.resource}
        self.check_reported_or_restored()

    def check_reported_or_restored(self) -> None:
        """Each key the undo touched is as before the run's first undone step, or a step on it stays."""
        entries = self.world.store.entries(self.world.run)
        [*_, reversal] = [e for e in entries if e.kind == "reversal"]
        by_id = {e.id: e for e in entries}
        now = values(self.world.root / "chain.db")
        keys: dict[str, list[dict[str, Any]]] = {}
        for step in reversal.body["steps"]:
            call = by_id[step["entry"]].body
            if call["tool"] in ("put", "attach", "remove"):
                keys.setdefault(call["arguments"]["key"], []).append(step)
        for key, steps in keys.items():
            reversed_now = [s for s in steps if s["status"] == "reversed"]
            if reversed_now and all(s in reversed_now or s.get("reason") == "already undone" for s in steps):
                # Steps undone by an earlier undo may have been followed by outside edits; what
                # this undo promises is the state before the earliest step it reversed.
                earliest = min(reversed_now, key=lambda s: int(s["entry"][1:]))
                expected = self.value_before[earliest["entry"]]
                assert now.get(key) == expected, (key, now.get(key), expected, steps)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def no_compensation_replaced_a_human_write_without_override(self) -> None:
        for row in undo_rows(self.world.journal.engine):
            assert row.override or row.replaced not in self.human_values, row

    @invariant()
    def each_token_is_compensated_at_most_once(self) -> None:
        tokens = [row.token_of for row in undo_rows(self.world.journal.engine)]
        assert len(tokens) == len(set(tokens)), tokens

    @invariant()
    def nothing_held_for_approval_happened_before_it(self) -> None:
        assert published(self.world.journal.engine) == self.approved

    @invariant()
    def the_run_record_verifies(self) -> None:
        record = self.world.store.export(self.world.run)
        key = self.world.store.public_key
        report = verify_record(record.to_bytes(), recorder_keys={key.kid: key})
        assert report.ok, report.problems

    @invariant()
    def nothing_was_compensated_after_its_undo_by(self) -> None:
        for entry in self.world.store.entries(self.world.run):
            answer = entry.body.get("answer") if entry.kind == "undo-outcome" else None
            if isinstance(answer, dict) and answer.get("status") == "done":
                assert parse_wire_time(answer["at"]) <= parse_wire_time(answer["undoBy"]), answer


EXAMPLES = int(os.environ.get("HATP_REVERSAL_EXAMPLES", "8"))
"""Random examples in CI (up to 25 rules each); bench/reversal_machine.py runs thousands."""

UndoMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_undo_state_machine = UndoMachine.TestCase

PATHS = (
    "an undo ran",
    "an undo planned a conflict",
    "an undo overrode a conflict",
    "an undo crashed",
    "an undo crashed after its server compensated",
    "an approved publish was made",
)


def test_the_machine_reaches_conflicts_overrides_crashes_and_approvals_with_every_invariant_held() -> None:
    """One fixed story through the same rules, so the paths a few random examples may miss are
    walked on every run, every invariant checked after each line of it."""
    REACHED.clear()
    machine = UndoMachine()
    invariants = [
        machine.no_compensation_replaced_a_human_write_without_override,
        machine.each_token_is_compensated_at_most_once,
        machine.nothing_held_for_approval_happened_before_it,
        machine.the_run_record_verifies,
        machine.nothing_was_compensated_after_its_undo_by,
    ]

    def then(*_: object) -> None:
        for holds in invariants:
            holds()

    try:
        then(machine.agent_puts("a", "1"), machine.agent_puts("b", "1"), machine.eve_edits("a"))
        then(machine.undo_from(1, override=False, crash_at=None, after_call=False))  # a conflicts
        first = machine.calls() + 1
        then(machine.agent_writes_a_key_twice_and_removes_it("c"), machine.agent_puts("c", "2"))
        then(machine.eve_edits("c"))
        then(machine.undo_from(first, override=True, crash_at=1, after_call=True))
        then(machine.agent_puts("b", "3"), machine.agent_attaches("a", "b"))
        then(machine.undo_from(machine.calls() - 1, override=False, crash_at=1, after_call=False))
        then(machine.agent_publishes("a"), machine.time_passes(5))
        then(machine.lee_approves_and_the_agent_calls_again())
    finally:
        machine.teardown()

    assert [path for path in PATHS if not REACHED[path]] == [], REACHED
