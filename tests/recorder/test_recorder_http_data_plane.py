"""The Recorder's data plane over streamable HTTP: 2026-era tool calls answered in front of the mcp
library, every other request (and every call it cannot answer alike) handed to the library.

In process: the Recorder with its tool servers embedded, served by uvicorn on this test's event
loop, reached by real MCP clients (the mcp library's and FastMCP's) and raw HTTP. Whether the
library answered a call is seen on ``Recorder.handle``, its only way to the Recorder. The last test
runs two ``hatp-recorder serve --transport http`` processes on one store.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp
import plain_server
import pytest
import uvicorn
from fastmcp import Client
from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from support.http_recorder import start_http_recorder
from support.ports import wait_listening
from support.waiting import SAFETY_CAP_SECONDS, poll, until_set
from test_recorder_data_plane import unchanged_but_for_the_token
from test_runs_across_processes import approve, configure, forwarded, recorded

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.front import http as front_http
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.servers.crm.server import build as build_crm
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

pytestmark = pytest.mark.anyio

LEAD = "human://acme.com/role/team-lead"
EMBEDDED = "http://127.0.0.1:9/embedded-in-this-process"
POLICY = {"autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "approver": LEAD}}
"""The CRM's declared calls go through; the plain server's undeclared ones wait for the team lead."""
VERSION = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass
class Served:
    url: str
    recorder: Recorder
    store: RunStore
    lee: SigningKey
    directory: Directory
    by_library: list[str] = field(default_factory=list)  # tools of the calls the library answered
    seen: int = 0  # entries made before this test

    def entries(self) -> list[Any]:
        """The entries this test made."""
        run = self.recorder.run_id
        return [] if run is None else self.store.entries(run)[self.seen :]

    async def ask_for(self, text: str) -> str:
        """The id of the ask held for ``plain_shout(text)``, once there is one."""
        run = self.recorder.run_id
        assert run is not None
        held = lambda: [a for a in self.recorder.asks.all(run) if a.terms.arguments == {"text": text}]  # noqa: E731
        found = await poll(held, f"an ask for plain_shout({text!r})")
        return found[0].entry.id

    def approve(self, ask: str) -> None:
        outcome = self.recorder.asks.decide(
            f"{self.recorder.run_id}/{ask}",
            "approve",
            person="lee",
            key=self.lee,
            directory=self.directory,
            now=utc_now(),
        )
        assert outcome.counted, outcome.message


@asynccontextmanager
async def recorder_over_http(tmp_path: Path, **app_options: Any) -> AsyncIterator[Served]:
    """A Recorder fronting the CRM and the plain server, its data plane in the HTTP app as it ships."""
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    lee = SigningKey.generate()
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (tmp_path / "directory.json").write_text(json.dumps({"people": people}))
    section = RecorderSection(
        agent="sales-bot",
        principal="human://acme.com/dana",
        directory=str(tmp_path / "directory.json"),
        max_wait_seconds=300,  # only a hung test waits that long
    )
    servers = {"crm": ServerConfig(url=EMBEDDED), "plain": ServerConfig(url=EMBEDDED)}
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    crm, journal = build_crm(tmp_path / "crm.db", SigningKey.generate())
    recorder = Recorder(
        RecorderConfig(recorder=section, servers=servers),
        store=store,
        policy=load_policy(tmp_path / "policy.json"),
        embedded={"crm": crm, "plain": plain_server.mcp},
    )
    async with AsyncExitStack() as stack:
        stack.callback(journal.engine.dispose)
        server_mcp = await recorder.start(stack)
        served = Served("", recorder, store, lee, Directory.load(tmp_path / "directory.json"))
        handle = recorder.handle

        async def handled_by_library(server: str, tool: str, arguments: dict[str, Any]) -> Any:
            served.by_library.append(f"{server}_{tool}")
            return await handle(server, tool, arguments)

        recorder.handle = handled_by_library  # type: ignore[method-assign]
        app = server_mcp.http_app(middleware=[front_http.data_plane(recorder, server_mcp)], **app_options)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        served.url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        web = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        )
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: web.serve(sockets=[listener]))
            await poll(lambda: web.started, "the HTTP server to listen")  # the server's own word
            try:
                yield served
            finally:
                web.should_exit = True


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def one_recorder(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """One Recorder for the module's tests: each sees only its own entries (see ``served``)."""
    async with recorder_over_http(tmp_path_factory.mktemp("recorder-over-http")) as served:
        yield served


@pytest.fixture
def served(one_recorder: Served) -> Served:
    """The module's Recorder, as if no test had called it yet."""
    one_recorder.by_library.clear()
    run = one_recorder.recorder.run_id  # None until the first call opens the run
    one_recorder.seen = 0 if run is None else len(one_recorder.store.entries(run))
    return one_recorder


def ended(process: subprocess.Popen[bytes]) -> str:
    """What a Recorder process told on stderr once it ended; only a hung one reaches the cap."""
    try:
        return process.communicate(timeout=SAFETY_CAP_SECONDS)[1].decode()
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"a Recorder did not end after {SAFETY_CAP_SECONDS:g} s") from None


def raw_call(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-era ``tools/call`` as a client sends it."""
    params = {"name": name, "arguments": arguments, "_meta": {**ENVELOPE, **(meta or {})}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def headers_for(name: str, **more: str) -> dict[str, str]:
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": name,
        **more,
    }


def without_entry(result: Any) -> dict[str, Any]:
    """A result as the agent sees it, but for which entry recorded it."""
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
    del dumped["_meta"]["hatp/recorder"]["entry"]
    return dumped


def without_entry_or_receipt(result: Any) -> tuple[dict[str, Any], str]:
    """A result as the agent sees it, but for which entry recorded it, the call the Recorder named
    (an id of its own for each call) and its receipt (signed at a time to the second: two reads a
    second apart differ there); and which key signed the receipt."""
    dumped = without_entry(result)
    journal = dumped["_meta"]["hatp/journal"]
    assert journal.pop("call")["run"] == dumped["_meta"]["hatp/recorder"]["run"]
    receipt = journal.pop("receipt")
    return dumped, receipt["kid"]


async def test_a_call_is_answered_on_the_data_plane_as_the_library_answers_it_and_keeps_no_token(
    served: Served,
) -> None:
    async with mcp.Client(served.url) as agent:
        listed = {tool.name for tool in (await agent.list_tools()).tools}
        won = await agent.call_tool("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})
        read = await agent.call_tool("crm_get_deal", {"deal_id": "D-882"})
        assert served.by_library == []

        async def progress(done: float, total: float | None, message: str | None) -> None: ...

        # The same read asking for progress is the library's to answer: the agent sees the same result.
        by_library = await agent.call_tool("crm_get_deal", {"deal_id": "D-882"}, progress_callback=progress)

    assert {"crm_update_deal", "crm_get_deal", "plain_shout"} <= listed
    assert served.by_library == ["crm_get_deal"]
    assert without_entry_or_receipt(read) == without_entry_or_receipt(by_library)
    write, *_ = served.entries()
    assert not won.is_error
    assert won.structured_content is not None
    assert won.structured_content["stage"] == "Won"
    assert write.body["intake"]["status"] == "verified"
    assert unchanged_but_for_the_token(won, write)
    assert "compensationToken" not in json.dumps(won.model_dump(by_alias=True))


async def test_a_call_asking_for_progress_gets_it_while_it_waits_and_its_result_once_approved(
    served: Served,
) -> None:
    told = anyio.Event()
    said: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append(done)
        told.set()

    async with mcp.Client(served.url) as agent, anyio.create_task_group() as tasks:
        results: list[Any] = []

        async def call() -> None:
            meta = {"hatp/wait": 300}
            results.append(
                await agent.call_tool("plain_shout", {"text": "wait"}, progress_callback=progress, meta=meta)
            )

        tasks.start_soon(call)
        await until_set(told, "the first progress notice")
        served.approve(await served.ask_for("wait"))

    [result] = results
    assert not result.is_error
    assert result.structured_content == {"result": "WAIT"}
    assert said
    assert said == sorted(set(said))  # strictly increasing, as MCP requires
    assert served.by_library == ["plain_shout"]


async def test_a_call_waiting_past_the_ping_interval_is_answered_on_an_event_stream_once_approved(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(front_http, "PING_SECONDS", 0.05)
    body = raw_call("plain_shout", {"text": "later"}, {"hatp/wait": 300})
    async with (
        httpx2.AsyncClient(timeout=None) as http,
        http.stream("POST", served.url, json=body, headers=headers_for("plain_shout")) as answer,
    ):
        served.approve(await served.ask_for("later"))
        stream = (await answer.aread()).decode()

    assert answer.headers["content-type"] == "text/event-stream"
    assert stream.startswith(": ping\r\n\r\n")
    last = stream.rstrip().rsplit("\r\n\r\n", 1)[-1]
    assert last.startswith("event: message\r\ndata: ")
    message = json.loads(last.removeprefix("event: message\r\ndata: "))
    assert message["id"] == 1
    assert message["result"]["structuredContent"] == {"result": "LATER"}
    assert served.by_library == []


async def test_a_handshake_era_agents_call_is_answered_by_the_data_plane_and_its_listings_by_the_library(
    served: Served,
) -> None:
    async with Client(served.url, mode="legacy") as agent:
        listed = {tool.name for tool in await agent.list_tools()}
        read = await agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})
        unknown = await agent.call_tool_mcp("crm_no_such_tool", {})
        protocol = agent.protocol_version

    assert protocol == "2025-11-25"
    assert "crm_get_deal" in listed
    assert not read.is_error
    assert unknown.is_error
    assert served.by_library == []
    entry, refused = served.entries()
    assert entry.id == read.meta["hatp/recorder"]["entry"]
    assert entry.body["intake"]["status"] == "verified"
    assert refused.body["code"] == "UNKNOWN_TOOL"


async def test_a_call_in_a_session_that_ended_is_left_to_the_library_which_refuses_it(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "crm_get_deal"}}
    body["params"]["arguments"] = {"deal_id": "D-881"}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
        "mcp-session-id": "no-such-session",
    }
    async with httpx2.AsyncClient() as http:
        answer = await http.post(served.url, json=body, headers=headers)

    assert answer.status_code == 404
    assert served.entries() == []


async def test_fastmcps_client_asks_for_progress_and_logs_so_the_library_answers_it(served: Served) -> None:
    async with Client(served.url) as agent:
        read = await agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})

    assert not read.is_error
    assert served.by_library == ["crm_get_deal"]


async def test_a_run_key_sent_back_on_a_new_connection_continues_the_run_and_an_unknown_one_is_refused(
    served: Served,
) -> None:
    async with mcp.Client(served.url) as agent:
        first = await agent.call_tool("crm_get_deal", {"deal_id": "D-881"})
    key = first.meta["hatp/recorder"]["runKey"]
    async with mcp.Client(served.url) as agent:
        again = await agent.call_tool("crm_get_deal", {"deal_id": "D-882"}, meta={"hatp/runKey": key})
        unknown = await agent.call_tool(
            "crm_get_deal", {"deal_id": "D-883"}, meta={"hatp/runKey": "rk_unknown"}
        )

    assert again.meta["hatp/recorder"]["run"] == first.meta["hatp/recorder"]["run"]
    assert unknown.is_error
    assert unknown.structured_content is not None
    assert unknown.structured_content["code"] == "RUN_KEY_UNKNOWN"
    assert served.by_library == []
    *calls, refusal = served.entries()
    assert [entry.body["arguments"]["deal_id"] for entry in calls] == ["D-881", "D-882"]
    assert refusal.body["code"] == "RUN_KEY_UNKNOWN"  # journaled, the key itself not
    assert "rk_unknown" not in json.dumps(refusal.body)


REFUSED = [
    pytest.param(b"{not json", {}, 400, PARSE_ERROR, id="malformed body"),
    pytest.param(
        json.dumps([raw_call("crm_get_deal", {"deal_id": "D-881"})]).encode(),
        {},
        400,
        INVALID_REQUEST,
        id="batch",
    ),
    pytest.param(
        json.dumps({**raw_call("crm_get_deal", {"deal_id": "D-881"}), "jsonrpc": "1.0"}).encode(),
        {},
        400,
        INVALID_REQUEST,
        id="not JSON-RPC 2.0",
    ),
    pytest.param(
        json.dumps(raw_call("crm_get_deal", {"deal_id": "D-881"})).encode(),
        {"mcp-name": "crm_update_deal"},
        400,
        HEADER_MISMATCH,
        id="routing header that disagrees",
    ),
    pytest.param(
        json.dumps(
            {
                **raw_call("crm_get_deal", {"deal_id": "D-881"}),
                "params": {
                    "name": "crm_get_deal",
                    "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION},
                },
            }
        ).encode(),
        {},
        400,
        INVALID_PARAMS,
        id="envelope without capabilities",
    ),
    pytest.param(
        json.dumps(raw_call("crm_get_deal", {"deal_id": "D-881"})).encode(),
        {"accept": "application/json"},
        406,
        None,
        id="Accept without event streams",
    ),
    pytest.param(
        json.dumps(raw_call("crm_get_deal", {"deal_id": "D" * DEFAULT_MAX_REQUEST_BODY_SIZE})).encode(),
        {},
        413,
        None,
        id="body over the library's limit",
    ),
]


@pytest.mark.parametrize(("body", "headers", "status", "code"), REFUSED)
async def test_a_request_the_library_refuses_gets_its_refusal_and_nothing_is_journaled(
    served: Served, body: bytes, headers: dict[str, str], status: int, code: int | None
) -> None:
    async with httpx2.AsyncClient() as http:
        answer = await http.post(served.url, content=body, headers=headers_for("crm_get_deal", **headers))

    assert answer.status_code == status
    if code is not None:
        assert answer.json()["error"]["code"] == code
    assert served.entries() == []


async def test_an_origin_the_guard_refuses_gets_no_answer_and_nothing_is_journaled(tmp_path: Path) -> None:
    async with (
        recorder_over_http(tmp_path, host_origin_protection=True) as served,
        httpx2.AsyncClient() as http,
    ):
        body = raw_call("crm_get_deal", {"deal_id": "D-881"})
        refused = await http.post(
            served.url, json=body, headers=headers_for("crm_get_deal", origin="http://attacker.example")
        )
        allowed = await http.post(served.url, json=body, headers=headers_for("crm_get_deal"))

        assert refused.status_code == 403
        assert allowed.status_code == 200
        assert len(served.entries()) == 1


async def test_a_recorder_that_fails_on_a_call_answers_an_internal_error(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(served.recorder, "answer", fails)
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            served.url,
            json=raw_call("crm_get_deal", {"deal_id": "D-881"}),
            headers=headers_for("crm_get_deal"),
        )

    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": INTERNAL_ERROR, "message": "Internal error"},
    }


@pytest.mark.slow
async def test_an_ask_held_by_one_recorder_process_and_approved_is_forwarded_once_through_another(
    tmp_path: Path,
) -> None:
    config = configure(tmp_path)
    SigningKey.generate().save(tmp_path / "recorder.key")  # made once: two Recorders starting must not race
    started = []
    for _ in range(2):
        process, port = start_http_recorder(config, tmp_path)
        started.append((process, port, f"http://127.0.0.1:{port}/mcp"))
    try:
        for process, port, _ in started:
            wait_listening(port, process, "a Recorder")
        (_, _, one), (_, _, another) = started
        async with mcp.Client(one) as agent:
            held = await agent.call_tool("plain_shout", {"text": "hi"})
            run, ask, key = recorded(held)["run"], recorded(held)["ask"], recorded(held)["runKey"]
            approve(config, run, ask)
            async with mcp.Client(another) as elsewhere:
                again = await elsewhere.call_tool("plain_shout", {"text": "hi"}, meta={"hatp/runKey": key})
            repeat = await agent.call_tool("plain_shout", {"text": "hi"}, meta={"hatp/runKey": key})
        async with httpx2.AsyncClient() as http:  # on loopback, a page from elsewhere is refused
            foreign = await http.post(
                one,
                json=raw_call("plain_shout", {"text": "hi"}),
                headers=headers_for("plain_shout", origin="http://attacker.example"),
            )
    finally:
        for process, _, _ in started:
            process.send_signal(signal.SIGTERM)
        errors = [ended(process) for process, _, _ in started]  # each ends on SIGTERM

    assert held.structured_content is not None
    assert held.structured_content["status"] == "pending_approval"
    assert not again.is_error, errors
    assert again.structured_content == {"result": "HI"}
    assert recorded(again)["run"] == run
    # The same call again at once, back through the first process, is a retry: the first answer.
    assert repeat.structured_content == {"result": "HI"}
    assert (recorded(repeat)["entry"], recorded(repeat)["replayed"]) == (recorded(again)["entry"], True)
    assert forwarded(tmp_path, run) == ["ok"]
    assert foreign.status_code == 403
    assert not any("Traceback" in said for said in errors), errors
