"""The gateway holds a charge's amount before forwarding it, keeps it if the call went through and
lets it go if the call failed: refused by the server or lost on the way."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import parse_policy
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.toolkit.wire import META_KEY

pytestmark = pytest.mark.anyio

# The shop has no keys: its declared undo is unknown to the host, but its "charges" still counts.
POLICY = parse_policy("""{"autonomy": {"unknown": "allow", "money": {
    "perRun": {"amount": "100", "currency": "USD"}}}}""")
CHARGES = {META_KEY: {"undo": {"kind": "compensate", "window": "P1D"}, "charges": True}}


def shop(seen_during_the_call: list[list[tuple[str, str, str]]], recorder: list[Recorder]) -> FastMCP:
    """A charging server: ``charge`` reports what the ledger held while it ran; the others fail."""
    server = FastMCP("shop")
    never = anyio.Event()

    @server.tool(meta=CHARGES)
    async def charge(amount: str, currency: str) -> str:
        seen_during_the_call.append(recorder[0].ledger.spends())
        return f"charged {amount} {currency}"

    @server.tool(meta=CHARGES)
    async def charge_declined(amount: str, currency: str) -> str:
        raise ToolError("card declined")

    @server.tool(meta=CHARGES)
    async def charge_hangs(amount: str, currency: str) -> str:
        await never.wait()  # until the Recorder gives up on it
        return "never"

    return server


async def test_a_charge_is_held_while_forwarded_and_only_calls_that_went_through_count(
    tmp_path: Path,
) -> None:
    seen: list[list[tuple[str, str, str]]] = []
    recorder: list[Recorder] = []
    usd = {"currency": "USD"}
    # Each call may take 3 s: long enough for a normal one on a loaded machine; the hung one waits it out.
    shops = {"shop": shop(seen, recorder)}
    async with recorder_world(tmp_path, shops, POLICY, principal="dana", timeout_seconds=3) as world:
        recorder.append(world.recorder)
        agent = world.agent
        first = await agent.call_tool_mcp("shop_charge", {"amount": "60", **usd})
        await agent.call_tool_mcp("shop_charge_declined", {"amount": "30", **usd})
        hung = await agent.call_tool_mcp("shop_charge_hangs", {"amount": "30", **usd})
        await agent.call_tool_mcp("shop_charge", {"amount": "40", **usd})
        await agent.call_tool_mcp("shop_charge", {"amount": "0.01", **usd})
        run = world.run
        entries = world.entries()
        spends = recorder[0].ledger.spends()

    assert seen[0] == [(run, "60", "held")]  # counted from the moment the call was allowed
    assert (hung.structured_content or {}).get("code") == "DOWNSTREAM_FAILED"
    assert [
        (e.kind, e.body["arguments"]["amount"], e.body.get("outcome", {}).get("status")) for e in entries
    ] == [
        ("call", "60", "ok"),
        ("call", "30", "error"),  # declined by the server
        ("call", "30", "failed"),  # lost on the way: the Recorder gave up waiting
        ("call", "40", "ok"),  # exactly the cap: the two failures did not count
        ("ask", "0.01", None),
    ]
    assert [e.body["decision"]["totals"]["perRun"]["spent"] for e in entries] == [
        "0",
        "60",
        "60",
        "60",
        "100",
    ]
    assert spends == [(run, "60", "spent"), (run, "40", "spent")]
    assert not first.is_error
