"""A tool server's log messages (``ctx.info`` inside a tool) reach the agent whose call is in flight;
what could be any of several agents' calls stays in the Recorder's own log."""

from __future__ import annotations

import logging
import sys
import warnings
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.logging import LogMessage
from support.waiting import until_set

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.anyio

POLICY = Policy.model_validate({"autonomy": {"unknown": "allow"}})
LOGGING_SERVER = Path(__file__).parent / "logging_server.py"


def chatty_server() -> tuple[FastMCP, anyio.Event]:
    """``tell`` logs at info and warning; ``wait`` stays in flight until ``tell`` has logged (the
    event is set once ``wait`` has started)."""
    mcp = FastMCP("chatty")
    told, waiting = anyio.Event(), anyio.Event()

    @mcp.tool
    async def tell(ctx: Context) -> str:
        await ctx.info("counting the shelves", logger_name="stock")
        await ctx.warning("shelf 3 is empty")
        told.set()
        return "told"

    @mcp.tool
    async def wait() -> str:
        waiting.set()
        await told.wait()
        return "waited"

    return mcp, waiting


class Heard:
    """The log messages an agent received."""

    def __init__(self) -> None:
        self.messages: list[LogMessage] = []

    async def __call__(self, message: LogMessage) -> None:
        self.messages.append(message)

    def said(self) -> list[tuple[str, Any]]:
        return [(m.level, m.data["msg"]) for m in self.messages]


async def test_a_servers_log_messages_during_a_call_reach_the_agent_that_made_it(tmp_path: Path) -> None:
    server, _ = chatty_server()
    heard = Heard()
    async with (
        recorder_world(tmp_path, {"shop": server}, POLICY) as world,
        Client(world.recorder.mcp, log_handler=heard) as agent,
    ):
        answer = await agent.call_tool_mcp("shop_tell", {})
        calls = [e for e in world.entries() if e.kind == "call"]

    assert not answer.is_error
    assert heard.said() == [("info", "counting the shelves"), ("warning", "shelf 3 is empty")]
    assert heard.messages[0].logger == "stock"
    [call] = calls
    assert call.body["outcome"] == {"status": "ok"}


async def test_the_agents_log_level_holds_back_the_servers_messages_below_it(tmp_path: Path) -> None:
    server, _ = chatty_server()
    heard = Heard()
    # logging/setLevel belongs to the handshake protocols; the 2026 one asks per request.
    async with (
        recorder_world(tmp_path, {"shop": server}, POLICY) as world,
        Client(world.recorder.mcp, log_handler=heard, mode="legacy") as agent,
    ):
        await agent.set_logging_level("warning")
        await agent.call_tool_mcp("shop_tell", {})

    assert heard.said() == [("warning", "shelf 3 is empty")]


async def test_a_log_message_while_two_calls_are_in_flight_stays_in_the_recorders_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, waiting = chatty_server()
    heard = Heard()
    async with (
        recorder_world(tmp_path, {"shop": server}, POLICY) as world,
        Client(world.recorder.mcp, log_handler=heard) as agent,
    ):
        with caplog.at_level(logging.INFO, logger="fastmcp.client.from_server"):
            async with anyio.create_task_group() as calls:
                calls.start_soon(agent.call_tool_mcp, "shop_wait", {})
                await until_set(waiting, "shop_wait to start")
                await agent.call_tool_mcp("shop_tell", {})

    assert heard.messages == []
    assert [r.getMessage() for r in caplog.records if "counting the shelves" in r.getMessage()]
    assert [r.levelno for r in caplog.records if "shelf 3 is empty" in r.getMessage()] == [logging.WARNING]


async def test_a_data_plane_call_to_a_stdio_server_relays_its_progress_and_logs_before_the_answer(
    tmp_path: Path,
) -> None:
    # A stdio server of the 2026 era is called with one JSON-RPC line (no client session): the link
    # hands the server's notifications about that request to the agent's relays, in line order.
    config = RecorderConfig(
        recorder=RecorderSection(agent="bot", principal="human://acme.com/dana"),
        servers={"shop": ServerConfig(command=sys.executable, args=[str(LOGGING_SERVER)])},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=POLICY)
    heard = Heard()
    progressed: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        progressed.append((done, total, message))

    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            shop = recorder.downstreams["shop"]
            assert shop._wire_meta is not None  # the data plane is open
            through_the_session: list[str] = []
            by_session = shop.call

            async def call(tool: str, arguments: dict[str, Any]) -> Any:
                through_the_session.append(tool)
                return await by_session(tool, arguments)

            shop.call = call  # type: ignore[method-assign]
            async with Client(mcp, log_handler=heard) as agent:
                # The mcp session's own call: no progressToken, which alone takes the client's path.
                told = await agent.session.call_tool("shop_tell", {})
                counted = await agent.call_tool_mcp("shop_count", {}, progress_handler=progress)
    finally:
        recorder.close()
        store.dispose()

    assert not told.is_error
    assert not counted.is_error
    assert through_the_session == []
    assert heard.said() == [
        ("info", "counting the shelves"),
        ("debug", "shelf 1 has 3 boxes"),
        ("warning", "shelf 3 is empty"),
    ]
    assert progressed == [(1, 2, "half the shelves")]


async def test_relaying_a_log_message_warns_of_no_deprecation_on_the_recorders_stderr(tmp_path: Path) -> None:
    server, _ = chatty_server()
    async with (
        recorder_world(tmp_path, {"shop": server}, POLICY) as world,
        Client(world.recorder.mcp, log_handler=Heard()) as agent,
    ):
        with warnings.catch_warnings(record=True) as caught:
            await agent.call_tool_mcp("shop_tell", {})

    assert [w for w in caught if "passthrough" in w.filename] == []
