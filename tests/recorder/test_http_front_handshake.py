"""The HTTP front answers a handshake-era session's calls on the data plane, relaying the tool
server's progress and log messages on the call's event stream, at the level the session set."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.logging import LogMessage
from support.waiting import poll
from test_stdio_front import World, crm_and_chatty

from hatp_journal.recorder.front import http as front_http

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def served_over_http(world: World) -> AsyncIterator[str]:
    """The world's Recorder as ``hatp-recorder serve --transport http`` serves it; its URL."""
    app = world.mcp.http_app(middleware=[front_http.data_plane(world.world.recorder, world.mcp)])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: web.serve(sockets=[listener]))
        await poll(lambda: web.started, "the HTTP server to listen")  # the server's own word
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        finally:
            web.should_exit = True


async def test_a_handshake_era_call_over_http_gets_the_servers_progress_and_logs_on_the_data_plane(
    tmp_path: Path,
) -> None:
    progressed: list[tuple[float, float | None, str | None]] = []
    logged: list[tuple[str, Any]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        progressed.append((done, total, message))

    async def log(message: LogMessage) -> None:
        logged.append((message.level, message.data["msg"]))

    async with (
        crm_and_chatty(tmp_path) as world,
        served_over_http(world) as url,
        Client(url, mode="legacy", log_handler=log) as agent,
    ):
        counted = await agent.call_tool_mcp("shop_count", {}, progress_handler=progress)
        heard_everything = list(logged)
        await agent.set_logging_level("warning")
        await agent.call_tool_mcp("shop_count", {})
        plain = await agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})

    assert world.by_library == []
    assert not counted.is_error
    assert not plain.is_error
    assert progressed == [(1, 2, "half the shelves")]
    assert heard_everything == [
        ("debug", "shelf 1 has 3 boxes"),
        ("info", "counting the shelves"),
        ("warning", "shelf 3 is empty"),
    ]
    assert logged[len(heard_everything) :] == [("warning", "shelf 3 is empty")]
    assert [e.body["tool"] for e in world.world.entries()] == ["count", "count", "get_deal"]


async def test_a_2026_era_call_in_a_handshake_session_is_left_to_the_library_and_journaled_once(
    tmp_path: Path,
) -> None:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    opening = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "crm_get_deal", "arguments": {"deal_id": "D-881"}, "_meta": meta}
    async with (
        crm_and_chatty(tmp_path) as world,
        served_over_http(world) as url,
        httpx2.AsyncClient() as http,
    ):
        opened = await http.post(url, json=opening, headers=headers)
        session = {
            **headers,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        answered = await http.post(url, json=call, headers=session)
        entries = world.world.entries()

    assert world.by_library == ["crm_get_deal"]  # the library says how such a mix is answered
    assert answered.status_code == 200
    [entry] = entries
    assert entry.body["tool"] == "get_deal"
