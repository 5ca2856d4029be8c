"""Two journals on one undo store, as two replicas of a tool server: a token minted by one is
compensated by the other, exactly once even when both compensate it at the same moment.

Each test runs on a SQLite file and on PostgreSQL (``store_url``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlmodel import Session
from support import kv_server

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.testing import FakeClock, JournalHarness
from hatp_journal.toolkit.wire import UndoAnswer

WAIT = 60  # seconds: every wait is bounded
REPLICAS = 4


@pytest.fixture
def replicas(store_url: str) -> Iterator[list[JournalHarness]]:
    key, recorder, clock = SigningKey.generate(), SigningKey.generate(), FakeClock()
    harnesses = [
        JournalHarness(
            *kv_server.TOOLS, store=store_url, server="kv://store", key=key, clock=clock, recorder=recorder
        )
        for _ in range(REPLICAS)
    ]
    yield harnesses
    for harness in harnesses:
        harness.journal.engine.dispose()


def value_of(harness: JournalHarness, key: str) -> tuple[str, str] | None:
    with Session(harness.journal.engine) as session:
        item = session.get(kv_server.KvItem, key)
        return (item.value, item.version) if item else None


def test_a_token_minted_by_one_replica_is_compensated_by_another(replicas: list[JournalHarness]) -> None:
    first, second = replicas[0], replicas[1]
    first.call("put", key="a", value="1")
    call = first.call("put", key="a", value="2")

    assert second.check(call).status == "ok"
    answer = second.undo(call)

    assert answer.status == "done"
    assert second.answer_verifies(answer)
    assert value_of(first, "a") == ("1", answer.version_left)
    assert first.undo(call) == answer  # a retry anywhere gets the same answer back


def test_replicas_compensating_one_token_at_once_run_the_compensation_once(
    replicas: list[JournalHarness],
) -> None:
    replicas[0].call("put", key="a", value="1")
    call = replicas[0].call("put", key="a", value="2")
    start = threading.Barrier(REPLICAS)

    def undo(harness: JournalHarness) -> UndoAnswer:
        start.wait(WAIT)
        return harness.undo(call)

    with ThreadPoolExecutor(max_workers=REPLICAS) as pool:
        answers = [future.result(WAIT) for future in [pool.submit(undo, h) for h in replicas]]

    assert [answer.status for answer in answers] == ["done"] * REPLICAS
    assert all(answer == answers[0] for answer in answers)
    after_put = call.journal.effect.version if call.journal.effect else None
    assert value_of(replicas[0], "a") == ("1", answers[0].version_left)
    assert answers[0].version_found == after_put  # every answer is the one compensation's
