"""The stdio front answers every era's tool calls on the data plane and every request at all.

In process: the front on two real pipes (tests/support/stdio_front.py), the Recorder's tool
servers embedded, and the agent either the mcp SDK's ``ClientSession`` (which negotiates the
handshake era, 2025-11-25, on ``initialize()``) or raw JSON-RPC lines. Whether the mcp library
answered a call is seen on ``Recorder.handle``, its only way to the Recorder.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, Context, FastMCP
from support.stdio_front import stdio_front
from support.waiting import until_set

from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.testing import RecorderWorld, recorder_world
from hatp_journal.recorder.testing.lines import hostile_lines
from hatp_journal.servers.crm.server import build as build_crm
from hatp_journal.toolkit import SigningKey

pytestmark = [
    pytest.mark.anyio,
    # The handshake era's logging (a server's ctx.info, a client's setLevel) is deprecated in 2026.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

POLICY = Policy.model_validate({"autonomy": {"compensate": "allow", "read": "allow", "unknown": "allow"}})
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
LOG_LEVEL = "io.modelcontextprotocol/logLevel"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # the front is written on asyncio's pipes


def chatty_server() -> FastMCP:
    """``count`` reports progress and logs at debug, info and warning before it answers."""
    mcp = FastMCP("chatty")

    @mcp.tool
    async def count(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half the shelves")
        await ctx.debug("shelf 1 has 3 boxes")
        await ctx.info("counting the shelves", logger_name="stock")
        await ctx.warning("shelf 3 is empty")
        return "counted"

    return mcp


@dataclass
class World:
    world: RecorderWorld
    by_library: list[str] = field(default_factory=list)  # tools of the calls the library answered

    @property
    def mcp(self) -> FastMCP:
        return self.world.recorder.mcp


@asynccontextmanager
async def crm_and_chatty(folder: Path) -> AsyncIterator[World]:
    """A Recorder over the demo CRM (on its own database in ``folder``) and the chatty server."""
    folder.mkdir(exist_ok=True)
    crm, journal = build_crm(folder / "crm.db", SigningKey.generate())
    try:
        async with recorder_world(folder, {"crm": crm, "shop": chatty_server()}, POLICY) as world:
            seen = World(world)
            handle = world.recorder.handle

            async def handled_by_library(server: str, tool: str, arguments: dict[str, Any]) -> Any:
                seen.by_library.append(f"{server}_{tool}")
                return await handle(server, tool, arguments)

            world.recorder.handle = handled_by_library  # type: ignore[method-assign]
            yield seen
    finally:
        journal.engine.dispose()


def comparable(entry: Any) -> str:
    """An entry's body as canonical text, but for what differs between two runs of one call:
    the server's receipt (signed at a time), the call the Recorder named (its run and an id of its
    own), its undo deadline and its token's digest."""
    body = json.loads(json.dumps(entry.body))
    journal = body.get("journal") or {}
    journal.pop("receipt", None)
    journal.pop("call", None)
    journal.pop("compensationTokenDigest", None)
    (journal.get("undo") or {}).pop("undoBy", None)
    return json.dumps({"kind": entry.kind, "body": body}, sort_keys=True)


CALLS = [
    ("crm_get_deal", {"deal_id": "D-881"}),
    ("crm_update_deal", {"deal_id": "D-882", "stage": "Won"}),
    ("crm_get_deal", {"deal_id": "no such deal"}),
]


async def test_a_handshake_era_sessions_calls_are_answered_by_the_data_plane_and_journaled_as_the_library_did(
    tmp_path: Path,
) -> None:
    async with crm_and_chatty(tmp_path / "library") as before:
        async with Client(before.mcp, mode="legacy") as agent:
            by_library = [await agent.call_tool_mcp(name, arguments) for name, arguments in CALLS]
        library_entries = [comparable(e) for e in before.world.entries()]
    assert before.by_library == [name for name, _ in CALLS]

    async with crm_and_chatty(tmp_path / "front") as now, stdio_front(now.world.recorder, now.mcp) as wire:
        async with wire.sdk_session() as session:
            opened = await session.initialize()
            answered = [await session.call_tool(name, arguments) for name, arguments in CALLS]
        front_entries = [comparable(e) for e in now.world.entries()]

    assert opened.protocol_version == "2025-11-25"
    assert now.by_library == []
    assert front_entries == library_entries
    for library, front in zip(by_library, answered, strict=True):
        assert front.is_error == library.is_error
        assert front.structured_content is not None
        assert library.structured_content is not None
        assert front.structured_content.keys() == library.structured_content.keys()
        assert front.meta is not None
        assert library.meta is not None
        assert front.meta["hatp/recorder"].keys() == library.meta["hatp/recorder"].keys()
    assert answered[1].structured_content["stage"] == "Won"
    assert "compensationToken" not in json.dumps([a.model_dump(by_alias=True) for a in answered])


async def test_a_handshake_era_call_on_the_data_plane_relays_the_servers_progress_and_logs_at_the_set_level(
    tmp_path: Path,
) -> None:
    progressed: list[tuple[float, float | None, str | None]] = []
    logged: list[tuple[str, Any]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        progressed.append((done, total, message))

    async def log(params: Any) -> None:
        logged.append((params.level, params.data["msg"]))

    async with (
        crm_and_chatty(tmp_path) as world,
        stdio_front(world.world.recorder, world.mcp) as wire,
        wire.sdk_session(logging_callback=log) as session,
    ):
        await session.initialize()
        everything = await session.call_tool("shop_count", {}, progress_callback=progress)
        heard_everything = list(logged)
        await session.set_logging_level("warning")
        await session.call_tool("shop_count", {})

    assert world.by_library == []
    assert not everything.is_error
    assert progressed == [(1, 2, "half the shelves")]
    assert heard_everything == [
        ("debug", "shelf 1 has 3 boxes"),
        ("info", "counting the shelves"),
        ("warning", "shelf 3 is empty"),
    ]
    assert logged[len(heard_everything) :] == [("warning", "shelf 3 is empty")]


async def test_a_2026_era_call_on_the_data_plane_relays_progress_and_the_log_levels_it_asked_for(
    tmp_path: Path,
) -> None:
    async with crm_and_chatty(tmp_path) as world, stdio_front(world.world.recorder, world.mcp) as wire:
        meta = {**MODERN, "progressToken": "p-1", LOG_LEVEL: "info"}
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "shop_count", "_meta": meta},
            }
        )
        answer = await wire.answer(1)
        silent = {"name": "shop_count", "_meta": MODERN}
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": silent})
        await wire.answer(2)

    assert world.by_library == []
    assert answer["result"]["structuredContent"] == {"result": "counted"}
    notes = [m for m in wire.received if "method" in m]
    assert [m["method"] for m in notes] == [
        "notifications/progress",
        "notifications/message",
        "notifications/message",
    ]
    assert notes[0]["params"] == {
        "progressToken": "p-1",
        "progress": 1,
        "total": 2,
        "message": "half the shelves",
    }
    assert [(m["params"]["level"], m["params"].get("logger")) for m in notes[1:]] == [
        ("info", "stock"),
        ("warning", None),
    ]
    assert wire.received.index(answer) > wire.received.index(notes[-1])  # the result comes last


async def test_the_library_keeps_the_handshake_listings_unknown_tools_and_calls_before_initialize(
    tmp_path: Path,
) -> None:
    async with crm_and_chatty(tmp_path) as world, stdio_front(world.world.recorder, world.mcp) as wire:
        early = {"name": "crm_get_deal", "arguments": {"deal_id": "D-881"}}
        wire.send({"jsonrpc": "2.0", "id": "early", "method": "tools/call", "params": early})
        before_initialize = await wire.answer("early")
        async with wire.sdk_session() as session:
            await session.initialize()
            listed = {tool.name for tool in (await session.list_tools()).tools}
            unknown = await session.call_tool("crm_no_such_tool", {"x": 1})
            prompts = await session.list_prompts()

    # Before initialize the handshake era has no session: the library refuses the call, as it always did.
    assert before_initialize["error"]["code"] == -32602
    assert {"crm_get_deal", "shop_count"} <= listed
    assert prompts.prompts is not None
    assert unknown.is_error
    assert unknown.structured_content is not None
    assert unknown.structured_content["code"] == "UNKNOWN_TOOL"
    # The unknown tool was the library's (refused by its middleware, never through handle).
    assert world.by_library == []
    assert [e.body["code"] for e in world.world.entries() if e.kind == "refused"] == ["UNKNOWN_TOOL"]


def refusals(world: World) -> dict[str, str]:
    """The code of each ``refused`` entry, by the tool it names."""
    return {e.body["tool"]: e.body["code"] for e in world.world.entries() if e.kind == "refused"}


HOSTILE_CALL = (
    '{{"jsonrpc": "2.0", "id": {id}, "method": "tools/call", '
    '"params": {{"name": "{name}", "arguments": {arguments}, "_meta": {meta}}}}}'
)


async def test_every_hostile_line_gets_its_json_rpc_answer_and_hostile_arguments_their_journaled_refusal(
    tmp_path: Path,
) -> None:
    modern = json.dumps(MODERN)
    huge = '{"deal_id": ' + "9" * 5000 + "}"
    deep = '{"deal_id": ' + "[" * 3000 + "]" * 3000 + "}"
    async with crm_and_chatty(tmp_path) as world, stdio_front(world.world.recorder, world.mcp) as wire:
        wire.send(b"not json")
        wire.send(b"\xff\xfe{")
        wire.send(HOSTILE_CALL.format(id=1, name="crm_get_deal", arguments=huge, meta=modern).encode())
        wire.send(HOSTILE_CALL.format(id=2, name="crm_update_deal", arguments=deep, meta=modern).encode())
        wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": []})
        wire.send([{"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}, 7])
        wire.send([])
        wire.send({"jsonrpc": "2.0", "id": 5.5, "method": "ping"})
        wire.send({"id": 6, "method": "ping"})
        wire.send(
            b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": '
            + b"[" * 2000
            + b"]" * 2000
            + b"}}"
        )
        wire.send(b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": ' + b"1" * 4400 + b"}}")
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": []})  # never answered
        wire.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        await wire.answer(9)

    answers = [a for line in wire.received for a in (line if isinstance(line, list) else [line])]
    codes = {a["id"]: a["error"]["code"] for a in answers if "error" in a and a["id"] is not None}
    nulls = [a["error"]["code"] for a in answers if a.get("id", 0) is None]
    assert codes == {3: -32602, 4: -32600, 6: -32600, 7: -32600, 8: -32600}
    assert sorted(nulls) == [-32700, -32700, -32600, -32600, -32600]  # 2 lines, 7 in a batch, [], id 5.5
    first, second = (await_result(answers, 1), await_result(answers, 2))
    assert first["structuredContent"]["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert second["structuredContent"]["code"] == "ARGUMENTS_TOO_DEEP"
    assert refusals(world) == {"get_deal": "ARGUMENTS_NOT_CANONICAL", "update_deal": "ARGUMENTS_TOO_DEEP"}
    assert len(answers) == len(codes) + len(nulls) + 3  # each once: the two calls and the last ping
    assert world.by_library == []


def await_result(answers: list[Any], request_id: int) -> dict[str, Any]:
    [found] = [a for a in answers if a.get("id") == request_id]
    return found["result"]  # type: ignore[no-any-return]


async def test_requests_still_queued_when_stdin_closes_are_answered_initialize_included(
    tmp_path: Path,
) -> None:
    async with crm_and_chatty(tmp_path) as world, stdio_front(world.world.recorder, world.mcp) as wire:
        initialize = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "leaving", "version": "1"},
        }
        wire.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": initialize})
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        wire.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        call = {"name": "crm_get_deal", "arguments": {"deal_id": "D-881"}}
        wire.send({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": call})
        wire.close()  # at once: nothing has been answered yet
        await until_set(wire.ended, "the front to close its end")

    assert wire.answers_to("init")[0]["result"]["protocolVersion"] == "2025-11-25"
    assert wire.answers_to("list")[0]["result"]["tools"]
    assert [len(wire.answers_to(i)) for i in ("init", "list", "call")] == [1, 1, 1]
    assert wire.answers_to("call")[0]["result"]["isError"] is False


FUZZ_LINES = 200
"""Lines per CI run (bench/stdio_hostile.py sends 10^4 and more)."""


async def test_a_bounded_fuzz_of_hostile_lines_gets_each_request_answered_once_and_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = list(
        hostile_lines(seed=26, count=FUZZ_LINES, tools=["crm_get_deal", "crm_update_deal", "shop_count"])
    )
    with caplog.at_level(logging.WARNING):
        async with crm_and_chatty(tmp_path) as world, stdio_front(world.world.recorder, world.mcp) as wire:
            async with wire.sdk_session() as session:
                await session.initialize()  # the handshake era's calls take the data plane too
            for hostile in lines:
                wire.send(hostile.line)
            wire.send({"jsonrpc": "2.0", "id": "last", "method": "ping"})
            await wire.answer("last")

    answers = [
        a for line in wire.received for a in (line if isinstance(line, list) else [line]) if "method" not in a
    ]
    by_id = Counter(json.dumps(a["id"]) for a in answers if a["id"] is not None)
    expected = Counter(json.dumps(i) for hostile in lines for i in hostile.answered_as)
    assert by_id - Counter({'"last"': 1, "1": 1}) == expected  # 1: the session's initialize
    assert sum(1 for a in answers if a["id"] is None) <= sum(hostile.null_answers for hostile in lines)
    assert [r for r in caplog.records if r.exc_info] == []
