"""The Recorder forwards an agent's calls, journals each one and applies the policy."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

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
    },
    "undoAuthority": "human://acme.com/role/team-lead",
}


@dataclass
class Gateway:
    agent: Client[Any]
    recorder: Recorder
    store: RunStore


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    SigningKey.generate().save(tmp_path / "deals.key")
    config = RecorderConfig(
        recorder=RecorderSection(agent="sales-bot", principal="human://acme.com/dana"),
        servers={
            "deals": ServerConfig(
                command=sys.executable,
                args=[str(EXAMPLE), "--db", str(tmp_path / "deals.db"), "--key", str(tmp_path / "deals.key")],
            ),
            "plain": ServerConfig(command=sys.executable, args=[str(HERE / "plain_server.py")]),
        },
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=load_policy(tmp_path / "policy.json"))
    async with AsyncExitStack() as stack:
        mcp = await recorder.start(stack)
        async with Client(mcp) as agent:
            yield Gateway(agent, recorder, store)


async def test_a_reversible_call_is_forwarded_journaled_and_its_token_hidden_from_the_agent(
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
    assert entry.body["journal"]["compensationToken"].startswith("ctk_")


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
