"""The reference "everything" server asks the agent's client things during a call (sampling,
elicitation, roots): through the Recorder the request reaches the agent's client that declared the
capability, its answer reaches the server, and each request is journaled as a note of the run; a
client of the 2026 protocol era gets them as ``input_required`` rounds. A client that did not declare
the capability gets the server's request refused cleanly (the call ends, with the server's error).
The server's instructions reach the agent, and no tool promises MCP tasks the Recorder does not offer.

One Recorder and one server process for the module; several agents in turn: in memory through the
mcp library, and over the stdio and HTTP fronts' data planes.
"""

from __future__ import annotations

import os
import socket
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from mcp import types as mcp_types
from support.stdio_front import stdio_front
from support.waiting import poll
from third_party_servers import NODE_BIN, require

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.front import http as front_http
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.slow

POLICY = {"autonomy": {"unknown": "allow", "read": "allow", "none": "allow", "compensate": "allow"}}
ROOT = "file:///work/project"
ANSWER = "Forty-two, said the agent's model"
ASKING = (
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "get-roots-list",
    "trigger-url-elicitation",
)


@dataclass
class Asked:
    """What each agent's client was asked and what each call answered."""

    tools: list[mcp_types.Tool] = field(default_factory=list)
    instructions: str | None = None
    sampled: list[Any] = field(default_factory=list)
    elicited: list[Any] = field(default_factory=list)
    answers: dict[str, mcp_types.CallToolResult] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    request_ids: list[Any] = field(default_factory=list)  # of the requests the agent's client got


def text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))


async def asking_calls(client: Client[Any], asked: Asked, prefix: str) -> None:
    asked.answers[f"{prefix} sampling"] = await client.call_tool_mcp(
        "every_trigger-sampling-request", {"prompt": "the answer?", "maxTokens": 20}
    )
    asked.answers[f"{prefix} elicitation"] = await client.call_tool_mcp(
        "every_trigger-elicitation-request", {}
    )
    asked.answers[f"{prefix} roots"] = await client.call_tool_mcp("every_get-roots-list", {})


async def session(tmp: Path) -> dict[str, Asked]:
    command = str(require(NODE_BIN / "mcp-server-everything"))
    config = RecorderConfig(
        recorder=RecorderSection(agent="tester", principal="human://acme.com/dana"),
        servers={"every": ServerConfig(command=command, args=["stdio"], env=dict(os.environ))},
    )
    store = RunStore(tmp / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=Policy.model_validate(POLICY))
    names = ("legacy", "undeclared", "modern", "modern undeclared", "stdio", "stdio 2026", "http")
    seen = {name: Asked() for name in names}
    legacy = seen["legacy"]

    async def sampled(messages: list[Any], params: Any, context: Any) -> str:
        legacy.sampled.append(params)
        return ANSWER

    async def elicited(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult[Any]:
        legacy.elicited.append(params)
        return ElicitResult(action="accept", content={"name": "Dana Example", "check": True})

    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            handlers: dict[str, Any] = {
                "sampling_handler": sampled,
                "elicitation_handler": elicited,
                "roots": [ROOT],
            }
            async with Client(mcp, mode="legacy", **handlers) as agent:
                legacy.tools = await agent.list_tools()
                legacy.instructions = agent.instructions
                await asking_calls(agent, legacy, "legacy")
            async with Client(mcp, mode="legacy") as agent:
                await asking_calls(agent, seen["undeclared"], "undeclared")
            modern = seen["modern"]

            async def modern_sampled(messages: list[Any], params: Any, context: Any) -> str:
                modern.sampled.append(params)
                return ANSWER

            async def modern_elicited(message: str, response_type: Any, params: Any, context: Any) -> Any:
                modern.elicited.append(params)
                return ElicitResult(action="accept", content={"name": "Eve Modern", "check": False})

            asking = {
                "sampling_handler": modern_sampled,
                "elicitation_handler": modern_elicited,
                "roots": [ROOT],
            }
            async with Client(mcp, **asking) as agent:  # auto: the 2026 era
                modern.instructions = agent.instructions
                await asking_calls(agent, modern, "modern")
            async with Client(mcp) as agent:  # the 2026 era, declaring nothing
                await asking_calls(agent, seen["modern undeclared"], "modern undeclared")
            await over_stdio(recorder, mcp, seen["stdio"])
            await over_stdio_in_the_2026_era(recorder, mcp, seen["stdio 2026"])
            await over_http(recorder, mcp, seen["http"])
        assert recorder.run_id is not None
        for asked in seen.values():
            asked.entries = store.entries(recorder.run_id)
    finally:
        recorder.close()
        store.dispose()
    return seen


async def over_stdio(recorder: Recorder, mcp: Any, asked: Asked) -> None:
    """The mcp SDK's own client session (the handshake era, as hosts speak it) on the stdio front:
    its calls take the data plane once it is initialized."""

    async def sampling(
        context: Any, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult:
        asked.sampled.append(params)
        return mcp_types.CreateMessageResult(
            role="assistant", model="stdio-model", content=mcp_types.TextContent(type="text", text=ANSWER)
        )

    async def elicitation(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.elicited.append(params)
        return mcp_types.ElicitResult(action="decline")

    async def roots(context: Any) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=ROOT, name="project")])

    async with stdio_front(recorder, mcp) as wire:
        options = {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": roots,
        }
        async with wire.sdk_session(**options) as agent:
            await agent.initialize()
            asked.answers["stdio sampling"] = await agent.call_tool(
                "every_trigger-sampling-request", {"prompt": "the answer?", "maxTokens": 20}
            )
            asked.answers["stdio elicitation"] = await agent.call_tool(
                "every_trigger-elicitation-request", {}
            )
        asking = ("sampling/createMessage", "elicitation/create")
        asked.request_ids = [
            m["id"] for m in wire.received if isinstance(m, dict) and m.get("method") in asking
        ]
        wire.close()


async def over_stdio_in_the_2026_era(recorder: Recorder, mcp: Any, asked: Asked) -> None:
    """Raw lines of the 2026 era on the stdio front's data plane: the server's question comes back as an
    ``input_required`` round; the call made again with the answer and the state gets the result."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    }
    arguments = {"prompt": "in rounds?", "maxTokens": 20}
    call = {"name": "every_trigger-sampling-request", "arguments": arguments, "_meta": meta}
    async with stdio_front(recorder, mcp) as wire:
        wire.send({"jsonrpc": "2.0", "id": "first", "method": "tools/call", "params": call})
        first = (await wire.answer("first"))["result"]
        asked.answers["stdio 2026 round"] = first
        [(key, question)] = first["inputRequests"].items()
        asked.sampled.append(question)
        answer = {"role": "assistant", "model": "round-model", "content": {"type": "text", "text": ANSWER}}
        again = {**call, "inputResponses": {key: answer}, "requestState": first["requestState"]}
        wire.send({"jsonrpc": "2.0", "id": "again", "method": "tools/call", "params": again})
        asked.answers["stdio 2026 sampling"] = (await wire.answer("again"))["result"]
        stale = {**again, "arguments": {"prompt": "another call", "maxTokens": 20}}
        wire.send({"jsonrpc": "2.0", "id": "stale", "method": "tools/call", "params": stale})
        asked.answers["stdio 2026 stale"] = (await wire.answer("stale"))["result"]
        wire.close()


async def over_http(recorder: Recorder, mcp: Any, asked: Asked) -> None:
    """A handshake-era session over HTTP whose client declares sampling: its calls take the library's
    way (the library relays the server's request on the call's event stream)."""

    async def sampled(messages: list[Any], params: Any, context: Any) -> str:
        asked.sampled.append(params)
        return ANSWER

    app = mcp.http_app(middleware=[front_http.data_plane(recorder, mcp)])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: web.serve(sockets=[listener]))
        await poll(lambda: web.started, "the HTTP server to listen")  # the server's own word
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        try:
            async with Client(url, mode="legacy", sampling_handler=sampled) as agent:
                asked.answers["http sampling"] = await agent.call_tool_mcp(
                    "every_trigger-sampling-request", {"prompt": "over http?", "maxTokens": 20}
                )
            await in_rounds_over_http(url, asked)
        finally:
            web.should_exit = True


async def in_rounds_over_http(url: str, asked: Asked) -> None:
    """A bare 2026-era call over HTTP (the data plane answers it as JSON): a round, then the result."""
    name = "every_trigger-sampling-request"
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    }
    params: dict[str, Any] = {"name": name, "arguments": {"prompt": "http rounds?"}, "_meta": meta}
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers=headers
        )
        round_ = first.json()["result"]
        asked.answers["http round"] = round_
        [key] = round_["inputRequests"]
        answer = {"role": "assistant", "model": "http-model", "content": {"type": "text", "text": ANSWER}}
        params = {**params, "inputResponses": {key: answer}, "requestState": round_["requestState"]}
        again = await http.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, headers=headers
        )
        asked.answers["http rounds result"] = again.json()["result"]
        asked.answers["http content type"] = first.headers["content-type"]


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Asked]:
    return anyio.run(session, tmp_path_factory.mktemp("asking"))


def notes(asked: Asked, method: str) -> list[dict[str, Any]]:
    return [e.body for e in asked.entries if e.kind == "note" and e.body.get("tool") == method]


def test_all_seventeen_tools_are_listed_with_the_ones_that_ask_the_agent(seen: dict[str, Asked]) -> None:
    names = {t.name.removeprefix("every_") for t in seen["legacy"].tools if t.name.startswith("every_")}
    assert len(names) == 17
    assert set(ASKING) <= names


def test_no_tool_promises_tasks_the_recorder_does_not_offer(seen: dict[str, Asked]) -> None:
    tools = {t.name: t for t in seen["legacy"].tools}
    assert all(t.execution is None for t in tools.values())  # absent: "forbidden"
    assert "every_simulate-research-query" in tools  # the server's "required" one


def test_the_servers_instructions_reach_the_agent_under_its_name(seen: dict[str, Asked]) -> None:
    instructions = seen["legacy"].instructions
    assert instructions is not None
    assert instructions.startswith("## every ")
    assert "Everything Server" in instructions


def test_a_sampling_request_reaches_the_agents_client_and_its_answer_reaches_the_server(
    seen: dict[str, Asked],
) -> None:
    legacy = seen["legacy"]
    [params] = legacy.sampled
    assert "the answer?" in params.messages[0].content.text
    assert params.max_tokens == 20
    answer = legacy.answers["legacy sampling"]
    assert not answer.is_error
    assert ANSWER in text(answer)  # the server got the agent's answer and put it in its result


def test_an_elicitation_request_reaches_the_agents_client_and_its_answer_reaches_the_server(
    seen: dict[str, Asked],
) -> None:
    [params] = seen["legacy"].elicited
    assert params.requested_schema["required"] == ["name"]
    answer = seen["legacy"].answers["legacy elicitation"]
    assert not answer.is_error
    assert "- Name: Dana Example" in text(answer)
    assert "- Agreed to terms: true" in text(answer)  # JavaScript says it


def test_a_roots_request_reaches_the_agents_client_and_its_roots_reach_the_server(
    seen: dict[str, Asked],
) -> None:
    answer = seen["legacy"].answers["legacy roots"]
    assert not answer.is_error
    assert f"URI: {ROOT}" in text(answer)


def test_each_relayed_request_is_journaled_as_a_note_without_what_the_person_typed(
    seen: dict[str, Asked],
) -> None:
    [sampling, *_] = notes(seen["legacy"], "sampling/createMessage")
    assert sampling["server"] == "every"
    assert sampling["outcome"]["status"] == "relayed"
    assert "the answer?" in sampling["arguments"]["messages"][0]["content"]["text"]
    [elicitation, *_] = notes(seen["legacy"], "elicitation/create")
    assert elicitation["outcome"] == {"status": "relayed", "answer": {"action": "accept"}}
    assert "Dana Example" not in str(elicitation)
    relayed_roots = [n for n in notes(seen["legacy"], "roots/list") if n["outcome"]["status"] == "relayed"]
    assert {"roots": [ROOT]} in [n["outcome"]["answer"] for n in relayed_roots]


def test_a_client_that_did_not_declare_the_capability_gets_the_call_refused_cleanly(
    seen: dict[str, Asked],
) -> None:
    undeclared = seen["undeclared"]
    answer = undeclared.answers["undeclared sampling"]
    assert answer.is_error  # the server's own error: it could not sample
    refused = [n for n in notes(undeclared, "sampling/createMessage") if n["outcome"]["status"] == "refused"]
    assert "RELAY_NOT_DECLARED" in [n["outcome"]["code"] for n in refused]
    elicitation = undeclared.answers["undeclared elicitation"]
    assert elicitation.is_error


def test_a_client_of_the_2026_era_gets_the_servers_requests_in_rounds_and_the_server_its_answers(
    seen: dict[str, Asked],
) -> None:
    modern = seen["modern"]
    [sampled] = modern.sampled
    assert "the answer?" in sampled.messages[0].content.text
    assert ANSWER in text(modern.answers["modern sampling"])
    [elicited] = modern.elicited
    assert elicited.requested_schema["required"] == ["name"]
    assert "- Name: Eve Modern" in text(modern.answers["modern elicitation"])
    assert modern.instructions is not None
    assert "Everything Server" in modern.instructions


def test_a_client_of_the_2026_era_that_declared_nothing_gets_the_request_refused(
    seen: dict[str, Asked],
) -> None:
    undeclared = seen["modern undeclared"]
    assert undeclared.answers["modern undeclared sampling"].is_error
    refused = [n["outcome"] for n in notes(undeclared, "sampling/createMessage")]
    assert {"status": "refused", "code": "RELAY_NOT_DECLARED"} in [
        {k: o[k] for k in ("status", "code") if k in o} for o in refused
    ]


def test_over_the_stdio_data_plane_in_the_2026_era_the_question_is_a_round_and_the_answer_reaches_the_server(
    seen: dict[str, Asked],
) -> None:
    stdio = seen["stdio 2026"]
    first = stdio.answers["stdio 2026 round"]
    assert first["resultType"] == "input_required"
    assert first["requestState"].startswith("hatp-round-")
    [question] = stdio.sampled
    assert question["method"] == "sampling/createMessage"
    assert "in rounds?" in question["params"]["messages"][0]["content"]["text"]
    result = stdio.answers["stdio 2026 sampling"]
    assert result["resultType"] == "complete"
    assert not result["isError"]
    assert ANSWER in result["content"][0]["text"]
    # The state names that call: sent with other arguments, it is refused, and nothing is called.
    stale = stdio.answers["stdio 2026 stale"]
    assert (stale["isError"], stale["structuredContent"]["code"]) == (True, "INPUT_STATE_UNKNOWN")


def test_over_the_stdio_data_plane_the_requests_reach_the_hosts_client_and_back(
    seen: dict[str, Asked],
) -> None:
    stdio = seen["stdio"]
    assert len(stdio.sampled) == 1
    assert ANSWER in text(stdio.answers["stdio sampling"])
    assert len(stdio.elicited) == 1
    assert "declined" in text(stdio.answers["stdio elicitation"])
    # Asked by the data plane (the front's own request lines), not through the library's session.
    assert len(stdio.request_ids) == 2
    assert all(str(i).startswith("hatp-relay-") for i in stdio.request_ids)


def test_over_http_a_session_whose_client_declared_sampling_gets_the_request_and_the_server_its_answer(
    seen: dict[str, Asked],
) -> None:
    http = seen["http"]
    [params] = http.sampled
    assert "over http?" in params.messages[0].content.text
    assert ANSWER in text(http.answers["http sampling"])


def test_over_http_a_2026_era_call_gets_the_servers_question_as_a_round_on_the_data_plane(
    seen: dict[str, Asked],
) -> None:
    http = seen["http"]
    assert http.answers["http content type"] == "application/json"  # the data plane's answer
    assert http.answers["http round"]["resultType"] == "input_required"
    result = http.answers["http rounds result"]
    assert not result["isError"]
    assert ANSWER in result["content"][0]["text"]
