"""A store whose entries are hostile never crashes a reader (issue 29, "Bad input").

Each example is one run of 8-24 entries of any kind, each a genuine-looking body with members
dropped or replaced by values of the wrong type or at the edges (dates, sizes, nesting), written
straight into a real SQLite Run Store (chained and sealed by its append, past the Recorder's own
writers). Then ``show``, ``plan``, ``review``, ``export``, ``approve``, ``deny`` and ``undo`` run on
that run, the approver's pages of the run are read (home, asks, runs, the run, its timeline, each
ask, plan and outcome) and the forms they show are sent back (a denial, an undo asked for, a
resume), and a live agent whose own run holds the same entries calls again (the held call, its
list of changes, explain, a checkpoint, an undo request); every few runs ``asks``, ``runs`` and
``tick`` read the whole store. No reader raises, no page answers 500, the
agent's server logs no exception; every entry that does not fit its kind is shown as unreadable by
``show``, every unreadable ask is named by ``asks`` and the Asks page, and a control run's pending
ask is always listed. Hypothesis runs derandomized; ``bench/stored_entries.py`` runs it with 10^4+
entries and prints the outcomes. A verified call whose journal object alone is changed (``call-journal``)
is read as a step too: one that does not fit is ``unresolved``, named ``JOURNAL_UNREADABLE``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import FastMCP
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from stored_entries_world import (
    Hostile,
    LoggedTracebacks,
    Store,
    Tally,
    agent_calls,
    agent_outcome,
    check_steps,
    hostile_entries,
    read_pages,
    read_whole_store,
    read_with_commands,
    signed_in_pages,
)

from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.testing import LEAD, RecorderWorld
from hatp_journal.recorder.web import WebApprover

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("HATP_STORED_RUNS", "12"))
"""Hostile runs (8-24 entries each: some 200 in CI, in two stores); bench/stored_entries.py runs
more and longer ones (10^4 entries)."""
ENTRIES = tuple(int(n) for n in os.environ.get("HATP_STORED_ENTRIES", "8-24").split("-"))
"""The entries of each hostile run, fewest-most: bench/stored_entries.py batches more per run, since
each run's readers cost about the same at 16 entries as at 60."""
RUNS_PER_STORE = int(os.environ.get("HATP_STORED_RUNS_PER_STORE", "10"))
"""Runs per store (and per agent, whose own run gets every entry of the store's runs)."""
TALLY = os.environ.get("HATP_FUZZ_TALLY")
"""A file to write this property's counts to, as one JSON line (bench/stored_entries.py reads it)."""

DUMP = os.environ.get("HATP_FUZZ_DUMP")
"""A file to write every traceback and miss to, for a person reading them all."""

AGENT_POLICY = Policy.model_validate(
    {
        "autonomy": {"compensate": "allow", "none": "ask", "unknown": "ask", "approver": LEAD},
        "undoAuthority": LEAD,
    }
)


def shop() -> FastMCP:
    server = FastMCP("shop")

    @server.tool
    def publish(n: int) -> str:
        """Publish post n (knows nothing of undo: the policy asks)."""
        return f"published {n}"

    return server


@dataclass
class Batch:
    """One store with its pages, and one agent whose own run gets the same entries."""

    shared: Store
    web: WebApprover
    client: TestClient
    world: RecorderWorld
    agent_tools: set[str]
    closing: list[Any] = field(default_factory=list)


@dataclass
class Batches:
    root: Path
    portal: BlockingPortal
    tally: Tally
    logged: LoggedTracebacks
    current: Batch | None = None
    made: int = 0

    def next(self) -> Batch:
        if self.current is not None and len(self.current.shared.runs) >= RUNS_PER_STORE:
            self.retire()
        if self.current is None:
            self.made += 1
            folder = self.root / f"store{self.made}"
            shared = Store.make(folder)
            pages = signed_in_pages(shared.config)
            web, client = pages.__enter__()
            agent = folder / "agent"
            agent.mkdir()
            directory = str(folder / "directory.json")  # the agent may ask for its own undo
            opening = partial(RecorderWorld.open, directory=directory)
            world = self.portal.call(opening, agent, {"shop": shop()}, AGENT_POLICY)
            tools = {tool.name for tool in self.portal.call(world.agent.list_tools)}
            self.portal.call(self._call, world, "shop_publish", {"n": -1})  # opens the run and its first ask
            self.current = Batch(shared, web, client, world, tools, [pages])
        return self.current

    async def _call(self, world: RecorderWorld, tool: str, arguments: dict[str, Any]) -> Any:
        return await world.agent.call_tool(tool, arguments, raise_on_error=False)

    def agent_reads(self, batch: Batch, entries: list[Hostile], seen: int) -> None:
        for hostile in entries:
            batch.world.store.append(batch.world.run, hostile.kind, hostile.body)
        for tool, arguments in agent_calls(seen):
            if tool not in batch.agent_tools:
                raise AssertionError(f"the agent has no tool {tool}: {sorted(batch.agent_tools)}")
            with self.tally.reading(f"agent {tool}"):
                before = len(self.logged.seen)
                result = self.portal.call(self._call, batch.world, tool, arguments)
                outcome = agent_outcome(result)
                assert outcome != "error BAD_ARGUMENTS", f"the fuzz called {tool} wrongly: {result}"
                self.tally.add(f"agent {tool}", outcome)
                self.tally.tracebacks += self.logged.seen[before:]

    def retire(self) -> None:
        batch, self.current = self.current, None
        if batch is None:
            return
        try:
            read_whole_store(self.tally, batch.shared)
        finally:
            for pages in batch.closing:
                pages.__exit__(None, None, None)
            self.portal.call(batch.world.close)
            batch.shared.store.dispose()


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Batches]:
    logged = LoggedTracebacks()
    logging.getLogger().addHandler(logged)
    try:
        with start_blocking_portal() as portal:
            made = Batches(tmp_path_factory.mktemp("stored"), portal, Tally(), logged)
            try:
                yield made
            finally:
                made.retire()
    finally:
        logging.getLogger().removeHandler(logged)


def test_hostile_stored_entries_never_crash_a_reader_and_each_odd_entry_is_named(batches: Batches) -> None:
    seen = [0]

    @settings(
        max_examples=RUNS,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a whole store is too big to shrink
    )
    @given(st.lists(hostile_entries(), min_size=ENTRIES[0], max_size=ENTRIES[-1]))
    def one_run(entries: list[Hostile]) -> None:
        seen[0] += 1
        batch = batches.next()
        run = batch.shared.write_run(entries)
        batches.tally.entries.update(hostile.kind for hostile in entries)
        check_steps(batches.tally, batch.shared, run)
        read_with_commands(batches.tally, batch.shared, run)
        read_pages(batches.tally, batch.client, batch.shared, run)
        batches.agent_reads(batch, entries, seen[0])

    one_run()
    batches.retire()
    tally = batches.tally
    if DUMP:
        Path(DUMP).write_text("\n=====\n".join(tally.tracebacks + tally.unnamed))
    if TALLY:
        with open(TALLY, "a", encoding="utf-8") as out:
            counts = {"runs": seen[0], "entries": dict(tally.entries), "outcomes": dict(tally.outcomes)}
            counts["seconds"] = {reader: round(s, 2) for reader, s in tally.seconds.most_common()}
            out.write(
                json.dumps({**counts, "tracebacks": len(tally.tracebacks), "unnamed": len(tally.unnamed)})
            )
            out.write("\n")

    assert not tally.tracebacks, f"{len(tally.tracebacks)} tracebacks; the first:\n" + "\n".join(
        tally.tracebacks[:3]
    )
    assert not tally.unnamed, f"{len(tally.unnamed)} misses; the first:\n" + "\n".join(tally.unnamed[:5])
    assert sum(tally.entries.values()) >= RUNS
