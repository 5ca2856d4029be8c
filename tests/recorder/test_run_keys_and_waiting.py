"""Run keys name a run across connections; a held call may wait for its decision, with progress.

In process (the tool server embedded, the agent on the in-memory transport): cheap, and the run
key and waiting logic is the same for every transport (stdio and HTTP: test_runs_across_processes).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import plain_server
import pytest
from fastmcp import Client
from sqlalchemy import text as sql
from support.waiting import until_set

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.cli.command_line import main as recorder_cli
from hatp_journal.recorder.config import (
    ConfigError,
    RecorderConfig,
    RecorderSection,
    ServerConfig,
    with_run_key,
)
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.keys import ClaimState, RunKeys, key_digest
from hatp_journal.recorder.runs.wire import ANSWER_SCHEMA, CALL_SCHEMA, AnswerMeta, CallMeta
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.schema import render
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.testing import FakeClock

pytestmark = pytest.mark.anyio

LEAD = "human://acme.com/role/team-lead"
EMBEDDED = "http://127.0.0.1:9/embedded-in-this-process"
SCHEMAS = Path(__file__).parents[2] / "docs" / "schema"


@dataclass
class Held:
    agent: Client[Any]
    recorder: Recorder
    store: RunStore
    lee: SigningKey
    directory: Directory
    clock: FakeClock

    def approve(self, run: str, ask: str) -> None:
        outcome = self.recorder.asks.decide(
            f"{run}/{ask}", "approve", person="lee", key=self.lee, directory=self.directory, now=self.clock()
        )
        assert outcome.counted, outcome.message

    def calls(self, run: str, text: str) -> list[str]:
        """The outcomes journaled for ``plain.shout(text)`` in ``run``."""
        entries = self.store.entries(run)
        return [
            e.body["outcome"]["status"]
            for e in entries
            if e.kind == "call" and e.body["arguments"] == {"text": text}
        ]


def held_for_the_lead(tmp_path: Path) -> SigningKey:
    """Write a policy that holds every plain-server call for the team lead, and a directory; lee's key."""
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "ask", "approver": LEAD}}))
    lee = SigningKey.generate()
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (tmp_path / "directory.json").write_text(json.dumps({"people": people}))
    return lee


def section(tmp_path: Path, **fields: Any) -> RecorderSection:
    return RecorderSection(
        agent="sales-bot",
        principal="human://acme.com/dana",
        directory=str(tmp_path / "directory.json"),
        **fields,
    )


@pytest.fixture
async def held(tmp_path: Path) -> AsyncIterator[Held]:
    """A Recorder whose every plain-server call is held for the team lead; waits of up to 30 s."""
    lee = held_for_the_lead(tmp_path)
    config = RecorderConfig(
        recorder=section(tmp_path, max_wait_seconds=30),
        servers={"plain": ServerConfig(url=EMBEDDED)},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    clock = FakeClock()
    policy = load_policy(tmp_path / "policy.json")
    recorder = Recorder(config, store=store, policy=policy, clock=clock, embedded={"plain": plain_server.mcp})
    async with AsyncExitStack() as stack:
        mcp = await recorder.start(stack)
        async with Client(mcp) as agent:
            yield Held(agent, recorder, store, lee, Directory.load(tmp_path / "directory.json"), clock)


def recorded(result: Any) -> dict[str, Any]:
    """``_meta["hatp/recorder"]`` of an answer, checked against its published schema."""
    assert result.meta is not None, result
    meta: dict[str, Any] = result.meta["hatp/recorder"]
    AnswerMeta.model_validate(meta)
    return meta


async def test_the_first_answer_issues_a_run_key_and_a_call_sending_it_back_continues_the_run(
    held: Held,
) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "one"})
    key = recorded(first)["runKey"]
    held.approve(recorded(first)["run"], recorded(first)["ask"])

    again = await held.agent.call_tool_mcp("plain_shout", {"text": "one"}, meta={"hatp/runKey": key})

    assert not again.is_error
    assert again.structured_content == {"result": "ONE"}
    assert recorded(again)["run"] == recorded(first)["run"]
    assert recorded(again)["runKey"] == key
    assert held.calls(recorded(first)["run"], "one") == ["ok"]


async def test_a_repeat_of_the_approved_call_gets_its_answer_and_one_after_the_retry_window_is_a_new_ask(
    held: Held,
) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "two"})
    run, ask = recorded(first)["run"], recorded(first)["ask"]
    held.approve(run, ask)
    used = await held.agent.call_tool_mcp("plain_shout", {"text": "two"})

    retry = await held.agent.call_tool_mcp("plain_shout", {"text": "two"})
    held.clock.advance(held.recorder.config.recorder.retry_window_seconds + 1)
    later = await held.agent.call_tool_mcp("plain_shout", {"text": "two"})

    assert retry.content == used.content
    assert recorded(retry) == {**recorded(used), "replayed": True}
    assert later.structured_content is not None
    assert later.structured_content["status"] == "pending_approval"
    assert later.structured_content["ask"] != ask
    assert held.calls(run, "two") == ["ok"]


async def test_an_approved_ask_claimed_by_another_caller_is_not_forwarded_here(held: Held) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "claimed"})
    run, ask = recorded(first)["run"], recorded(first)["ask"]
    held.approve(run, ask)
    assert held.recorder.sessions.keys.claim(run, ask, utc_now()) is ClaimState.OURS  # another caller's

    again = await held.agent.call_tool_mcp("plain_shout", {"text": "claimed"})

    assert again.structured_content is not None
    assert again.structured_content["status"] == "pending_approval"
    assert held.calls(run, "claimed") == []


async def refused_with(held: Held, key: Any) -> tuple[str, dict[str, Any]]:
    """The code a call sending ``key`` is refused with, and the entry that journaled it."""
    result = await held.agent.call_tool_mcp("plain_shout", {"text": "keyed"}, meta={"hatp/runKey": key})
    assert result.is_error
    assert result.structured_content is not None
    own = held.recorder.run_id
    assert own is not None
    entry = held.store.entry(own, result.structured_content["entry"])
    assert entry.kind == "refused"
    return result.structured_content["code"], entry.body


async def test_an_unknown_run_key_is_refused_and_journaled(held: Held) -> None:
    code, body = await refused_with(held, "rk_nobody-ever-had-this-key")

    assert code == "RUN_KEY_UNKNOWN"
    assert body["code"] == "RUN_KEY_UNKNOWN"
    assert body["runKeyDigest"] == key_digest("rk_nobody-ever-had-this-key")
    assert body["arguments"] == {"text": "keyed"}
    assert "rk_nobody-ever-had-this-key" not in json.dumps(body)


@pytest.mark.parametrize("key", [42, "short", "has spaces in it", "x" * 201])
async def test_a_run_key_that_could_not_be_one_is_refused_and_journaled(held: Held, key: Any) -> None:
    code, body = await refused_with(held, key)

    assert code == "RUN_KEY_INVALID"
    assert body["server"] == "plain"


async def test_another_agents_run_key_is_refused_and_journaled(held: Held) -> None:
    theirs = held.store.open_run(agent="other-bot", principal="human://acme.com/dana").id
    key = RunKeys(held.store).issue(theirs, utc_now())

    code, _ = await refused_with(held, key)

    assert code == "RUN_KEY_NOT_YOURS"
    assert held.store.entries(theirs) == []


async def test_another_principals_run_key_is_refused(held: Held) -> None:
    theirs = held.store.open_run(agent="sales-bot", principal="human://acme.com/eve").id

    code, _ = await refused_with(held, RunKeys(held.store).issue(theirs, utc_now()))

    assert code == "RUN_KEY_NOT_YOURS"


async def test_a_closed_runs_key_sent_back_starts_a_new_run_that_notes_the_one_it_continues(
    held: Held,
) -> None:
    closed = held.store.open_run(agent="sales-bot", principal="human://acme.com/dana").id
    key = RunKeys(held.store).issue(closed, utc_now())
    held.store.close_run(closed)

    first = await held.agent.call_tool_mcp("plain_shout", {"text": "later"}, meta={"hatp/runKey": key})
    again = await held.agent.call_tool_mcp("plain_shout", {"text": "later"}, meta={"hatp/runKey": key})

    assert recorded(first)["status"] == "pending_approval"  # held for the lead as any call, not refused
    run = recorded(first)["run"]
    assert run != closed
    assert recorded(first)["runKey"] == key  # the same key goes on naming the work
    assert recorded(again)["run"] == run
    [note, ask, *_] = held.store.entries(run)
    assert (note.kind, note.body["tool"]) == ("note", "continue_run")
    assert note.body["outcome"]["continues"] == closed
    assert note.body["arguments"] == {"runKeyDigest": key_digest(key)}
    assert ask.kind == "ask"
    assert held.store.run(closed).closed_at is not None  # the closed run stays closed, unchanged


async def test_a_waiting_call_sends_progress_and_is_forwarded_once_approved(held: Held) -> None:
    events: list[tuple[str, Any]] = []
    waiting = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        events.append(("progress", (done, total, message)))
        waiting.set()

    async def call() -> None:
        result = await held.agent.call_tool_mcp(
            "plain_shout", {"text": "wait"}, progress_handler=progress, meta={"hatp/wait": 20}
        )
        events.append(("result", result))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        await until_set(waiting, "the held call's first progress notice")
        run = held.recorder.run_id
        assert run is not None
        [ask] = [a for a in held.recorder.asks.all(run) if a.entry.body["arguments"] == {"text": "wait"}]
        held.approve(run, ask.entry.id)

    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "result"
    assert set(kinds[:-1]) == {"progress"}
    done = [value[0] for kind, value in events if kind == "progress"]
    assert done == sorted(set(done))  # strictly increasing, as MCP requires
    assert all(value[1] == 20 for kind, value in events if kind == "progress")
    result = events[-1][1]
    assert not result.is_error
    assert result.structured_content == {"result": "WAIT"}
    assert "wait" not in recorded(result)  # waited as asked: nothing to say
    assert held.calls(run, "wait") == ["ok"]


async def test_a_wait_above_the_maximum_is_capped_and_said_and_its_end_answers_pending(
    tmp_path: Path,
) -> None:
    held_for_the_lead(tmp_path)
    config = RecorderConfig(
        recorder=section(tmp_path, max_wait_seconds=0.3), servers={"plain": ServerConfig(url=EMBEDDED)}
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(
        config,
        store=store,
        policy=load_policy(tmp_path / "policy.json"),
        embedded={"plain": plain_server.mcp},
    )
    async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
        result = await agent.call_tool_mcp("plain_shout", {"text": "long"}, meta={"hatp/wait": 3600})
        ignored = await agent.call_tool_mcp("plain_shout", {"text": "odd"}, meta={"hatp/wait": "soon"})

    assert result.structured_content is not None
    assert result.structured_content["status"] == "pending_approval"
    assert recorded(result)["wait"] == {"seconds": 0.3, "asked": 3600, "capped": True}
    assert recorded(ignored)["wait"] == {"seconds": 0, "asked": "soon", "ignored": True}


async def test_a_run_key_set_by_the_host_opens_its_run_and_a_second_recorder_continues_it(
    tmp_path: Path,
) -> None:
    held_for_the_lead(tmp_path)
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow"}}))
    config = RecorderConfig(
        recorder=section(tmp_path, run_key="host-chose-this-key"),
        servers={"plain": ServerConfig(url=EMBEDDED)},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    runs = []
    for text in ("first", "second"):
        recorder = Recorder(
            config,
            store=store,
            policy=load_policy(tmp_path / "policy.json"),
            embedded={"plain": plain_server.mcp},
        )
        async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
            await agent.call_tool_mcp("plain_shout", {"text": text})
        assert not recorder.close()  # the host's run outlives the process
        runs.append(recorder.run_id)

    assert runs[0] == runs[1]
    assert runs[0] is not None
    assert [e.body["arguments"]["text"] for e in store.entries(runs[0])] == ["first", "second"]
    assert store.run(runs[0]).closed_at is None


async def test_an_idle_keyed_run_is_closed_and_signed_and_its_key_then_goes_on_in_a_new_run(
    held: Held,
) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "idle"})
    run, key = recorded(first)["run"], recorded(first)["runKey"]
    keys = RunKeys(held.store)
    hour = timedelta(hours=1)

    assert keys.close_idle(held.clock(), hour) == []
    held.clock.advance(2 * 3600)
    assert keys.close_idle(held.clock(), hour) == [run]
    assert held.store.run(run).closed_at is not None
    assert held.store.latest_checkpoint(run) is not None
    later = await held.agent.call_tool_mcp("plain_shout", {"text": "back"}, meta={"hatp/runKey": key})
    assert recorded(later)["status"] == "pending_approval"
    assert recorded(later)["run"] not in (run, None)


async def test_a_retry_under_the_key_of_a_run_closed_since_gets_the_first_answer_not_a_second_write(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow"}}))
    config = RecorderConfig(recorder=section(tmp_path), servers={"plain": ServerConfig(url=EMBEDDED)})
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    policy = load_policy(tmp_path / "policy.json")
    meta: dict[str, Any] = {"hatp/idempotencyKey": "order-42"}
    answers = []
    for _ in range(2):  # two processes in turn; the first closes its run as it ends
        recorder = Recorder(config, store=store, policy=policy, embedded={"plain": plain_server.mcp})
        async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
            answers.append(await agent.call_tool_mcp("plain_shout", {"text": "once"}, meta=meta))
        recorder.close()
        meta = {**meta, "hatp/runKey": recorded(answers[0])["runKey"]}
    first, retry = (recorded(a) for a in answers)

    assert store.run(first["run"]).closed_at is not None
    assert retry["replayed"] is True
    assert (retry["run"], retry["entry"]) == (first["run"], first["entry"])
    assert retry.get("runKey") == first["runKey"]
    shouts = [e for r in store.runs() for e in store.entries(r.id) if e.kind == "call"]
    assert len(shouts) == 1


def test_a_host_run_key_that_could_not_be_one_stops_the_recorder_with_a_config_error() -> None:
    config = RecorderConfig(servers={"plain": ServerConfig(url=EMBEDDED)})

    with pytest.raises(ConfigError):
        with_run_key(config, "no spaces please")
    assert with_run_key(config, None) is config


def test_the_committed_schemas_of_the_recorders_meta_equal_the_code() -> None:
    for name, model in ((CALL_SCHEMA, CallMeta), (ANSWER_SCHEMA, AnswerMeta)):
        assert (SCHEMAS / name).read_text(encoding="utf-8") == render(
            model.model_json_schema(by_alias=True)
        ), f"docs/schema/{name} drifted; run `make schema`"
    CallMeta.model_validate({"hatp/runKey": "rk_0123456789", "hatp/wait": 30, "progressToken": 1})


def test_tick_closes_a_keyed_run_left_idle_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held_for_the_lead(tmp_path)
    lines = [
        "[recorder]",
        'directory = "directory.json"',
        "run_idle_seconds = 60",
        "[servers.plain]",
        f'url = "{EMBEDDED}"',
    ]
    (tmp_path / "recorder.toml").write_text("\n".join(lines) + "\n")
    store = RunStore(tmp_path / "recorder.db", SigningKey.load_or_create(tmp_path / "recorder.key"))
    idle = store.open_run(agent="agent", principal="principal").id
    RunKeys(store).issue(idle, datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    busy = store.open_run(agent="agent", principal="principal").id
    RunKeys(store).issue(busy, datetime(2026, 11, 1, 9, 1, 30, tzinfo=UTC))

    code = recorder_cli(
        ["--config", str(tmp_path / "recorder.toml"), "tick", "--now", "2026-11-01T09:02:00Z"]
    )

    assert code == 0
    assert f"{idle}\tclosed" in capsys.readouterr().out
    assert store.run(idle).closed_at is not None
    assert store.run(busy).closed_at is None


async def test_a_process_whose_own_run_was_closed_as_idle_goes_on_in_a_new_run_under_the_same_key(
    held: Held,
) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "before"})
    held.clock.advance(2 * 3600)
    RunKeys(held.store).close_idle(held.clock(), timedelta(hours=1))

    later = await held.agent.call_tool_mcp("plain_shout", {"text": "after"})

    assert recorded(later)["run"] != recorded(first)["run"]
    assert recorded(later)["runKey"] == recorded(first)["runKey"]  # the key names the work, in its new run
    assert held.recorder.run_id == recorded(later)["run"]
    [note, *_] = held.store.entries(recorded(later)["run"])
    assert note.body["outcome"]["continues"] == recorded(first)["run"]


async def test_a_claim_another_host_took_over_is_not_sent_by_the_process_that_made_it(held: Held) -> None:
    first = await held.agent.call_tool_mcp("plain_shout", {"text": "slow"})
    run, ask = recorded(first)["run"], recorded(first)["ask"]
    held.approve(run, ask)
    keys = held.recorder.sessions.keys
    assert keys.claim(run, ask, held.clock()) is ClaimState.OURS
    with held.store.engine.begin() as connection:  # taken over elsewhere: this one was presumed dead
        connection.execute(sql("UPDATE rec_ask_claim SET holder = 'elsewhere:1:00000000'"))

    sent = keys.claim_sent(run, ask, held.clock())

    assert not sent
    claim = keys.claim_of(run, ask)
    assert claim is not None
    assert (claim.holder, claim.sent) == ("elsewhere:1:00000000", None)
