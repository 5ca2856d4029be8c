"""The Recorder's data plane over stdio: tool calls as JSON-RPC, the rest through the mcp library."""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.gateway.downstream import Downstream, DownstreamCode, DownstreamError
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.anyio

POLICY = {"autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask"}}
CRM = "hatp_journal.servers.crm.cli"
PLAIN = Path(__file__).parent / "plain_server.py"


def recorder_with_crm(folder: Path) -> StdioTransport:
    """``hatp-recorder serve`` over stdio with the demo CRM behind it."""
    (folder / "policy.json").write_text(json.dumps(POLICY))
    args = ["-m", CRM, "serve", "--db", str(folder / "crm.db")]
    (folder / "recorder.toml").write_text(
        f"[servers.crm]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    )
    command = [
        "-m",
        "hatp_journal.recorder.cli.command_line",
        "--config",
        str(folder / "recorder.toml"),
        "serve",
    ]
    return StdioTransport(sys.executable, command, env=dict(os.environ), cwd=str(folder), keep_alive=False)


def entries(folder: Path) -> list[Any]:
    store = RunStore(folder / "recorder.db", SigningKey.from_file(folder / "recorder.key"))
    try:
        (run,) = store.runs()
        return store.entries(run.id)
    finally:
        store.dispose()


def unchanged_but_for_the_token(result: Any, entry: Any) -> bool:
    """The agent's journal object is the server's: the entry's, whose token became its digest."""
    kept = {k: v for k, v in entry.body["journal"].items() if k != "compensationTokenDigest"}
    return bool(result.meta["hatp/journal"] == kept and "compensationToken" not in json.dumps(result.meta))


async def test_calls_in_flight_together_are_answered_each_with_its_own_result_and_entry(
    tmp_path: Path,
) -> None:
    deals = [f"D-{n}" for n in (881, 882, 883, 884, 885)]
    answers: dict[str, Any] = {}
    async with Client(recorder_with_crm(tmp_path), timeout=60) as agent:

        async def read(deal: str) -> None:
            answers[deal] = await agent.call_tool_mcp("crm_get_deal", {"deal_id": deal})

        async with anyio.create_task_group() as calls:
            for deal in deals:
                calls.start_soon(read, deal)
        won = await agent.call_tool_mcp("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})

    recorded = {entry.id: entry for entry in entries(tmp_path)}
    for deal, answer in answers.items():
        entry = recorded[answer.meta["hatp/recorder"]["entry"]]
        assert entry.body["arguments"] == {"deal_id": deal}
        assert (answer.is_error, entry.body["outcome"]["status"]) in ((False, "ok"), (True, "error"))
    write = recorded[won.meta["hatp/recorder"]["entry"]]
    assert len(recorded) == len(deals) + 1
    assert write.body["intake"]["status"] == "verified"
    assert unchanged_but_for_the_token(won, write)
    assert won.structured_content["stage"] == "Won"


async def test_a_legacy_agent_is_served_by_the_mcp_library_and_journaled_the_same(tmp_path: Path) -> None:
    async with Client(recorder_with_crm(tmp_path), timeout=60, mode="legacy") as agent:
        won = await agent.call_tool_mcp("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})

    (entry,) = entries(tmp_path)
    assert won.meta["hatp/recorder"]["entry"] == entry.id
    assert entry.body["intake"]["status"] == "verified"
    assert unchanged_but_for_the_token(won, entry)
    assert won.structured_content["stage"] == "Won"


async def test_a_downstream_called_on_the_data_plane_answers_as_it_wrote_and_a_dead_one_fails_cleanly(
    tmp_path: Path,
) -> None:
    plain = Downstream("plain", ServerConfig(command=sys.executable, args=[str(PLAIN)]))
    async with AsyncExitStack() as stack:
        await plain.connect(stack)
        shouted = await plain.call_wire("shout", {"text": "hi"})
        unknown = await plain.call_wire("no_such_tool", {})
        with pytest.raises(DownstreamError) as crashed:
            await plain.call_wire("crash", {})
        with pytest.raises(DownstreamError) as after:
            await plain.call_wire("shout", {"text": "again"})

    assert shouted["structuredContent"] == {"result": "HI"}
    assert unknown["isError"] is True
    assert crashed.value.code == after.value.code == DownstreamCode.DOWNSTREAM_FAILED
