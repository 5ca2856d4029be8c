"""The Recorder forwards an agent's calls, journals each one and applies the policy."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import plain_server
import pytest
from fastmcp import Client

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.downstream import DownstreamCode, DownstreamError
from hatp_journal.recorder.intake.tokens import TokenStore
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.asks import DecisionOutcome
from hatp_journal.recorder.testing import EMBEDDED_URL
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url, token_digest, verify
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import Receipt

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
EXAMPLE = HERE.parent / "toolkit" / "example_server.py"

POLICY = {
    "autonomy": {
        "compensate": "allow",
        "unknown": "ask",
        "none": "ask",
        "read": "allow",
        "via": {"ui": "ask"},
        "minWindowSeconds": 259200,
        "approver": "human://acme.com/role/team-lead",
        "decideWithinSeconds": 3600,
    },
    "undoAuthority": "human://acme.com/role/team-lead",
}


LEAD = "human://acme.com/role/team-lead"


@dataclass
class Gateway:
    agent: Client[Any]
    recorder: Recorder
    store: RunStore
    clock: FakeClock
    directory: Directory
    keys: dict[str, SigningKey]

    def decide(self, ask: str, decision: Any, person: str, key: str | None = None) -> DecisionOutcome:
        assert self.recorder.run_id is not None
        return self.recorder.asks.decide(
            f"{self.recorder.run_id}/{ask}",
            decision,
            person=person,
            key=self.keys[key or person],
            directory=self.directory,
            now=self.clock(),
        )


def example_deals() -> ModuleType:
    """tests/toolkit/example_server.py as a module: the one ``import example_server`` gives there
    (its table is declared once per process)."""
    if "example_server" not in sys.modules:
        spec = importlib.util.spec_from_file_location("example_server", EXAMPLE)
        assert spec is not None
        assert spec.loader is not None
        sys.modules["example_server"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["example_server"])
    return sys.modules["example_server"]


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    """A fresh Recorder and run; its two servers run in this process (no process boundary is under
    test here: the last two tests start them over stdio, as ``serve`` does)."""
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    keys = {person: SigningKey.generate() for person in ("lee", "eve")}
    people = [
        {"id": "lee", "roles": [LEAD], "publicKey": b64url(keys["lee"].public.raw())},
        {"id": "eve", "roles": [], "publicKey": b64url(keys["eve"].public.raw())},
    ]
    (tmp_path / "directory.json").write_text(json.dumps({"people": people}))
    deals, journal = example_deals().build(tmp_path / "deals.db", SigningKey.generate())
    config = RecorderConfig(
        recorder=RecorderSection(
            agent="sales-bot", principal="human://acme.com/dana", directory=str(tmp_path / "directory.json")
        ),
        servers={"deals": ServerConfig(url=EMBEDDED_URL), "plain": ServerConfig(url=EMBEDDED_URL)},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    clock = FakeClock()
    embedded = {"deals": deals, "plain": plain_server.mcp}
    policy = load_policy(tmp_path / "policy.json")
    recorder = Recorder(config, store=store, policy=policy, clock=clock, embedded=embedded)
    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            async with Client(mcp) as agent:
                directory = Directory.load(tmp_path / "directory.json")
                yield Gateway(agent, recorder, store, clock, directory, keys)
    finally:
        store.dispose()
        journal.engine.dispose()


async def test_a_reversible_call_is_forwarded_journaled_and_its_token_kept_out_of_record_and_agent(
    gateway: Gateway,
) -> None:
    result = await gateway.agent.call_tool_mcp("deals_set_stage", {"deal_id": "D-881", "stage": "Won"})

    assert not result.is_error
    assert result.meta is not None
    journal = result.meta["hatp/journal"]
    assert journal["effect"]["summary"] == "Deal D-881 stage: Proposal → Won"
    assert "compensationToken" not in json.dumps(result.model_dump(by_alias=True))
    assert gateway.recorder.run_id is not None
    [entry] = gateway.store.entries(gateway.recorder.run_id)
    assert entry.body["decision"]["action"] == "allow"
    assert entry.body["intake"]["status"] == "verified"
    assert "compensationToken" not in entry.body["journal"]
    digest = entry.body["journal"]["compensationTokenDigest"]
    token = TokenStore(gateway.store.engine).token(digest)
    assert token is not None
    assert token.startswith("ctk_")
    assert token_digest(token) == digest


async def test_the_agent_can_neither_list_nor_call_the_binding_tools(gateway: Gateway) -> None:
    names = {tool.name for tool in await gateway.agent.list_tools()}

    assert "deals_set_stage" in names
    assert "plain_shout" in names
    assert not any("hatp_journal" in name for name in names)
    refused = await gateway.agent.call_tool_mcp(
        "deals_hatp_journal_compensate", {"token": "x", "ifVersion": "v1"}
    )
    assert refused.is_error


async def test_irreversible_and_unknown_calls_wait_for_approval_and_are_not_forwarded(
    gateway: Gateway,
) -> None:
    note = await gateway.agent.call_tool_mcp("deals_send_note", {"to": "buyer@globex.com", "text": "hi"})
    shout = await gateway.agent.call_tool_mcp("plain_shout", {"text": "hi"})

    assert note.structured_content is not None
    assert note.structured_content["status"] == "pending_approval"
    assert shout.structured_content is not None
    assert shout.structured_content["status"] == "pending_approval"
    assert "reasons" not in note.structured_content
    assert gateway.recorder.run_id is not None
    entries = gateway.store.entries(gateway.recorder.run_id)
    kinds = [entry.kind for entry in entries]
    reasons = [[r["code"] for r in entry.body["decision"]["reasons"]] for entry in entries]
    assert reasons == [["IRREVERSIBLE"], ["UNKNOWN_UNDO"]]
    assert kinds == ["ask", "ask"]


async def test_reads_are_allowed_and_journaled(gateway: Gateway) -> None:
    result = await gateway.agent.call_tool_mcp("deals_get_deal", {"deal_id": "D-881"})

    assert not result.is_error
    assert gateway.recorder.run_id is not None
    [entry] = gateway.store.entries(gateway.recorder.run_id)
    assert entry.body["decision"]["action"] == "allow"
    assert entry.body["intake"]["kind"] == "read"


NOTE = {"to": "buyer@globex.com", "text": "Welcome to Acme"}


async def send_note(gateway: Gateway) -> Any:
    result = await gateway.agent.call_tool_mcp("deals_send_note", NOTE)
    assert result.structured_content is not None
    return result


async def test_an_approved_ask_is_forwarded_when_the_agent_calls_again_and_only_once(
    gateway: Gateway,
) -> None:
    first = await send_note(gateway)
    ask = first.structured_content["ask"]
    still = await send_note(gateway)

    outcome = gateway.decide(ask, "approve", "lee")
    forwarded = await send_note(gateway)
    gateway.clock.advance(gateway.recorder.config.recorder.retry_window_seconds + 1)  # not a retry
    again = await send_note(gateway)

    assert still.structured_content == first.structured_content
    assert outcome.counted
    assert forwarded.structured_content == {"sent_to": "buyer@globex.com"}
    assert again.structured_content["status"] == "pending_approval"
    assert again.structured_content["ask"] != ask
    assert gateway.recorder.run_id is not None
    entries = gateway.store.entries(gateway.recorder.run_id)
    call = next(e for e in entries if e.kind == "call")
    assert call.body["ask"] == ask
    assert call.body["decision"] == {"action": "approved", "by": "lee"}
    approval = outcome.entry.body
    receipt = Receipt.model_validate(approval["receipt"])
    assert verify(
        receipt, {"approval": approval["approval"]}, {gateway.keys["lee"].kid: gateway.keys["lee"].public}
    )


async def test_a_denied_ask_is_refused_to_the_agent_and_never_forwarded(gateway: Gateway) -> None:
    ask = (await send_note(gateway)).structured_content["ask"]

    gateway.decide(ask, "deny", "lee")
    refused = await send_note(gateway)

    assert refused.is_error
    assert refused.structured_content["code"] == "ASK_DENIED"
    assert gateway.recorder.run_id is not None
    assert [e.kind for e in gateway.store.entries(gateway.recorder.run_id)] == ["ask", "decision", "refused"]


async def test_an_ask_past_its_deadline_is_withdrawn_naming_who_was_asked_and_a_late_click_is_not_counted(
    gateway: Gateway,
) -> None:
    ask = (await send_note(gateway)).structured_content["ask"]
    gateway.clock.advance(3601)

    refused = await send_note(gateway)
    late = gateway.decide(ask, "approve", "lee")

    assert refused.structured_content["code"] == "DEADLINE_EXCEEDED"
    assert gateway.recorder.run_id is not None
    entries = gateway.store.entries(gateway.recorder.run_id)
    withdrawn = next(e for e in entries if e.kind == "withdrawn")
    assert withdrawn.body["code"] == "DEADLINE_EXCEEDED"
    assert withdrawn.body["asked"] == ["lee"]
    assert not late.counted
    assert late.entry.body["counted"] is False
    assert not any(e.kind == "call" for e in entries)


async def test_only_a_holder_of_the_role_with_their_own_key_can_approve(gateway: Gateway) -> None:
    ask = (await send_note(gateway)).structured_content["ask"]

    without_role = gateway.decide(ask, "approve", "eve")
    wrong_key = gateway.decide(ask, "approve", "lee", key="eve")
    still = await send_note(gateway)

    assert not without_role.counted
    assert not wrong_key.counted
    assert still.structured_content["status"] == "pending_approval"


async def test_a_server_that_comes_back_with_another_key_than_the_one_pinned_is_refused(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    policy = load_policy(tmp_path / "policy.json")

    def config(key_file: str) -> RecorderConfig:
        SigningKey.load_or_create(tmp_path / key_file)
        deals = ServerConfig(
            command=sys.executable,
            args=[str(EXAMPLE), "--db", str(tmp_path / "deals.db"), "--key", str(tmp_path / key_file)],
        )
        return RecorderConfig(servers={"deals": deals})

    async with AsyncExitStack() as stack:
        await Recorder(config("first.key"), store=store, policy=policy).start(stack)
    async with AsyncExitStack() as stack:
        await Recorder(config("first.key"), store=store, policy=policy).start(stack)
    with pytest.raises(DownstreamError) as refused:
        async with AsyncExitStack() as stack:
            await Recorder(config("second.key"), store=store, policy=policy).start(stack)
    assert refused.value.code == DownstreamCode.KEY_CHANGED


async def test_a_downstream_that_hangs_or_crashes_gives_a_clear_error_and_the_others_keep_working(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow", "read": "allow"}}))
    SigningKey.generate().save(tmp_path / "deals.key")
    config = RecorderConfig(
        servers={
            "deals": ServerConfig(
                command=sys.executable,
                args=[str(EXAMPLE), "--db", str(tmp_path / "deals.db"), "--key", str(tmp_path / "deals.key")],
            ),
            "plain": ServerConfig(
                command=sys.executable, args=[str(HERE / "plain_server.py")], timeout_seconds=2
            ),
        },
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=load_policy(tmp_path / "policy.json"))
    async with AsyncExitStack() as stack:
        mcp = await recorder.start(stack)
        async with Client(mcp) as agent:
            hung = await agent.call_tool_mcp("plain_hang", {"seconds": 30})
            crashed = await agent.call_tool_mcp("plain_crash", {})
            read = await agent.call_tool_mcp("deals_get_deal", {"deal_id": "D-881"})

    assert hung.is_error
    assert crashed.is_error
    assert hung.structured_content is not None
    assert crashed.structured_content is not None
    assert hung.structured_content["code"] == crashed.structured_content["code"] == "DOWNSTREAM_FAILED"
    assert not read.is_error
    assert recorder.run_id is not None
    outcomes = [e.body["outcome"]["status"] for e in store.entries(recorder.run_id)]
    assert outcomes == ["failed", "failed", "ok"]
