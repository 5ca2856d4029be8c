"""An agent's retry gets the first answer: a write retried within the window, or with its idempotency
key, is not made again; a new key, a read, or the window passed make a new call.

In process over SQLite files: the CRM embedded (its charges counted in its own store), the agent on
the in-memory transport. The fleet case (a killed Recorder, PostgreSQL) is test_recorder_fleet.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from sqlmodel import Session, select

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.wire import AnswerMeta
from hatp_journal.servers.crm.server import build as build_crm
from hatp_journal.servers.crm.store import Charge
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.testing import FakeClock

pytestmark = pytest.mark.anyio

LEAD = "human://acme.com/role/team-lead"
EMBEDDED = "http://127.0.0.1:9/embedded-in-this-process"
ORDER = "O-1001"
KEY = "hatp/idempotencyKey"


@dataclass
class World:
    agent: Client[Any]
    recorder: Recorder
    store: RunStore
    crm: Any  # the CRM's journal: its engine holds the charges
    clock: FakeClock
    lee: SigningKey

    async def charge(self, amount: str = "10.00", meta: dict[str, Any] | None = None) -> Any:
        arguments = {"order_id": ORDER, "amount": amount, "currency": "USD"}
        return await self.agent.call_tool_mcp("crm_charge_order", arguments, meta=meta)

    def charges(self) -> list[str]:
        """The charge ids the CRM holds: one per charge that reached it."""
        with Session(self.crm.engine) as session:
            return [charge.id for charge in session.exec(select(Charge)).all()]

    def entries(self, kind: str) -> list[Any]:
        assert self.recorder.run_id is not None
        return [entry for entry in self.store.entries(self.recorder.run_id) if entry.kind == kind]


def recorded(result: Any) -> dict[str, Any]:
    """``_meta["hatp/recorder"]`` of an answer, checked against its published schema."""
    assert result.meta is not None, result
    meta: dict[str, Any] = result.meta["hatp/recorder"]
    AnswerMeta.model_validate(meta)
    return meta


async def world_of(tmp_path: Path, **section: Any) -> AsyncIterator[World]:
    lee = SigningKey.generate()
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (tmp_path / "directory.json").write_text(json.dumps({"people": people}))
    autonomy = {"compensate": "allow", "read": "allow", "none": "allow", "unknown": "allow", "approver": LEAD}
    cap = {"amount": "100", "currency": "USD"}  # what a run may charge without an ask
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {**autonomy, "money": {"perRun": cap}}}))
    config = RecorderConfig(
        recorder=RecorderSection(
            agent="sales-bot",
            principal="human://acme.com/dana",
            directory=str(tmp_path / "directory.json"),
            **section,
        ),
        servers={"crm": ServerConfig(url=EMBEDDED)},
    )
    crm, journal = build_crm(tmp_path / "crm.db", SigningKey.generate())
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    clock = FakeClock()
    policy = load_policy(tmp_path / "policy.json")
    recorder = Recorder(config, store=store, policy=policy, clock=clock, embedded={"crm": crm})
    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            async with Client(mcp) as agent:
                yield World(agent, recorder, store, journal, clock, lee)
    finally:
        store.dispose()
        journal.engine.dispose()


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async for made in world_of(tmp_path):
        yield made


async def test_a_write_retried_within_the_window_gets_the_first_answer_and_the_crm_is_charged_once(
    world: World,
) -> None:
    first = await world.charge()
    world.clock.advance(world.recorder.config.recorder.retry_window_seconds - 1)
    retry = await world.charge()

    assert not first.is_error, first.content
    assert retry.structured_content == first.structured_content
    assert retry.content == first.content
    assert recorded(retry) == {**recorded(first), "replayed": True}
    assert world.charges() == [first.structured_content["charge"]]
    assert len(world.entries("call")) == 1  # the record holds the call once, as it happened


async def test_the_same_write_after_the_window_is_made_again(world: World) -> None:
    first = await world.charge()
    world.clock.advance(world.recorder.config.recorder.retry_window_seconds + 1)
    second = await world.charge()

    assert recorded(second)["entry"] != recorded(first)["entry"]
    assert "replayed" not in recorded(second)
    assert len(world.charges()) == 2


async def test_the_same_write_with_a_new_idempotency_key_is_made_again_and_with_its_old_key_is_not(
    world: World,
) -> None:
    first = await world.charge(meta={KEY: "order-1001-charge-1"})
    second = await world.charge(meta={KEY: "order-1001-charge-2"})
    world.clock.advance(3600)  # far past the window: a key is recognised for a day
    first_again = await world.charge(meta={KEY: "order-1001-charge-1"})

    assert second.structured_content["charge"] != first.structured_content["charge"]
    assert first_again.structured_content == first.structured_content
    assert recorded(first_again)["entry"] == recorded(first)["entry"]
    assert recorded(first_again)["replayed"] is True
    assert sorted(world.charges()) == sorted(r.structured_content["charge"] for r in (first, second))


async def test_an_idempotency_key_sent_again_with_another_call_is_refused_and_journaled(world: World) -> None:
    first = await world.charge("10.00", meta={KEY: "charge-once"})

    other = await world.charge("11.00", meta={KEY: "charge-once"})

    assert other.is_error
    assert recorded(other)["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert recorded(first)["entry"] in recorded(other)["message"]
    [refused] = world.entries("refused")
    assert refused.id == recorded(other)["entry"]
    assert (refused.body["code"], refused.body["arguments"]["amount"]) == ("IDEMPOTENCY_KEY_REUSED", "11.00")
    assert len(world.charges()) == 1


@pytest.mark.parametrize("key", [7, "", "k" * 256, "line\nbreak", ["a"]])
async def test_an_idempotency_key_that_is_not_a_short_printable_string_is_refused_and_nothing_is_made(
    world: World, key: Any
) -> None:
    result = await world.charge(meta={KEY: key})

    assert result.is_error
    assert recorded(result)["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert [e.body["code"] for e in world.entries("refused")] == ["IDEMPOTENCY_KEY_INVALID"]
    assert world.charges() == []


async def test_a_read_repeated_within_the_window_is_read_again(world: World) -> None:
    await world.agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})
    again = await world.agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})

    assert "replayed" not in recorded(again)
    assert len(world.entries("call")) == 2


async def test_an_approved_write_retried_after_its_answer_gets_it_without_a_new_ask(world: World) -> None:
    held = await world.charge("150.00")
    run, ask = recorded(held)["run"], recorded(held)["ask"]
    directory = Directory.load(Path(str(world.recorder.config.recorder.directory)))
    decided = world.recorder.asks.decide(
        f"{run}/{ask}", "approve", person="lee", key=world.lee, directory=directory, now=world.clock()
    )
    assert decided.counted, decided.message
    made = await world.charge("150.00")

    retry = await world.charge("150.00")

    assert retry.structured_content == made.structured_content
    assert recorded(retry)["entry"] == recorded(made)["entry"]
    assert [e.id for e in world.entries("ask")] == [ask]
    assert len(world.charges()) == 1


async def test_a_retry_of_a_write_whose_answer_was_too_large_to_keep_says_so_and_is_not_made_again(
    tmp_path: Path,
) -> None:
    async for world in world_of(tmp_path, max_journal_bytes=64):
        first = await world.charge()
        retry = await world.charge()

        assert not first.is_error
        assert retry.is_error
        assert recorded(retry)["code"] == "ANSWER_NOT_KEPT"
        assert (recorded(retry)["entry"], recorded(retry)["replayed"]) == (recorded(first)["entry"], True)
        assert len(world.charges()) == 1


async def test_a_retry_window_of_zero_makes_every_repeat_a_new_call(tmp_path: Path) -> None:
    async for world in world_of(tmp_path, retry_window_seconds=0):
        await world.charge()
        await world.charge()

        assert len(world.charges()) == 2


async def test_a_write_made_again_after_a_write_of_the_same_tool_with_other_arguments_is_made(
    world: World,
) -> None:
    await world.charge("10.00")
    await world.charge("11.00")
    third = await world.charge("10.00")  # within the window, but meant: 10, 11, 10 is three charges

    assert "replayed" not in recorded(third)
    assert len(world.charges()) == 3
