"""Planning pauses the cyclic garbage collector and freezes the run it read while it checks
(record/gc_pause.py): whatever happens, the collector is left as it was found, nothing frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from hatp_journal.recorder.changes.steps import Step
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.gc_pause import gc_frozen, gc_paused
from hatp_journal.recorder.undo import UndoCode, UndoError, UndoRequest, build_plan
from hatp_journal.recorder.undo.planner import PlannedUndo
from hatp_journal.toolkit import SigningKey

DANA = "human://acme.com/dana"
LEAD = "human://acme.com/role/team-lead"
NOW = datetime(2026, 12, 3, tzinfo=UTC)

seen_while_checking: list[tuple[bool, bool]] = []
"""(collector on, something frozen) as each check saw it."""


@pytest.fixture
def collector_on() -> Iterator[None]:
    """Each test starts with the collector on and nothing frozen, and leaves it so."""
    gc.enable()
    gc.unfreeze()
    seen_while_checking.clear()
    yield
    gc.enable()
    gc.unfreeze()


def a_write(n: int) -> dict[str, Any]:
    """A verified, compensable write of deal ``D-n`` as the gateway journals it."""
    resource = f"crm://acme/deal/D-{n}"
    return {
        "server": "crm",
        "tool": "update_deal",
        "arguments": {"deal_id": f"D-{n}"},
        "intake": {"status": "verified", "kind": "compensate"},
        "journal": {
            "server": "crm",
            "compensationTokenDigest": f"sha256:{n:064x}",
            "undo": {"kind": "compensate", "undoBy": "2099-01-01T00:00:00Z"},
            "effect": {"summary": f"Create deal D-{n}", "resource": resource, "version": "v1"},
        },
        "outcome": {"status": "ok"},
        "links": [],
    }


def a_run(tmp_path: Path) -> tuple[RunStore, str]:
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    run = store.open_run(agent="sales-bot", principal=DANA)
    for n in (1, 2):
        store.append(run.id, "call", a_write(n))
    return store, run.id


def plan(store: RunStore, run_id: str, check: Any) -> PlannedUndo:
    return anyio.run(
        lambda: build_plan(
            store,
            run_id,
            UndoRequest(from_step=1),
            requested_by=DANA,
            undo_authority=LEAD,
            check=check,
            now=NOW,
        )
    )


async def answers_ok(step: Step) -> dict[str, Any]:
    seen_while_checking.append((gc.isenabled(), gc.get_freeze_count() > 0))
    return {
        "server": "crm",
        "operation": "check",
        "status": "ok",
        "tokenDigest": step.token_digest,
        "versionFound": "v1",
        "at": "2026-12-03T00:00:00Z",
    }


def test_checks_run_with_the_collector_on_and_the_run_frozen_and_after_the_plan_nothing_is_frozen(
    tmp_path: Path, collector_on: None
) -> None:
    store, run_id = a_run(tmp_path)

    planned = plan(store, run_id, answers_ok)

    assert [s.entry for s in planned.plan.steps] == ["e2", "e1"]
    assert seen_while_checking == [(True, True), (True, True)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_check_that_raises_still_leaves_the_collector_on_and_nothing_frozen(
    tmp_path: Path, collector_on: None
) -> None:
    store, run_id = a_run(tmp_path)

    async def broken(step: Step) -> dict[str, Any]:
        raise RuntimeError("the check crashed")

    with pytest.raises(RuntimeError, match="the check crashed"):
        plan(store, run_id, broken)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_planning_an_unknown_run_is_refused_and_leaves_the_collector_on(
    tmp_path: Path, collector_on: None
) -> None:
    store, _ = a_run(tmp_path)

    with pytest.raises(UndoError) as refused:
        plan(store, "no-such-run", answers_ok)
    assert refused.value.code == UndoCode.UNKNOWN_RUN
    assert gc.isenabled()


def test_a_collector_turned_off_before_planning_stays_off(tmp_path: Path, collector_on: None) -> None:
    store, run_id = a_run(tmp_path)
    gc.disable()

    plan(store, run_id, answers_ok)

    assert not gc.isenabled()


def test_a_nested_pause_leaves_the_collector_to_the_outer_one(collector_on: None) -> None:
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_frozen_block_that_raises_unfreezes(collector_on: None) -> None:
    frozen_inside: list[bool] = []

    def fail_frozen() -> None:
        with gc_frozen():
            frozen_inside.append(gc.get_freeze_count() > 0)
            raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        fail_frozen()
    assert frozen_inside == [True]
    assert gc.get_freeze_count() == 0
