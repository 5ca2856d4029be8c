"""The reference "everything" server behind the Recorder: the agent sees its tools (output schemas,
titles, annotations, ``_meta``), resources, resource templates and prompts as the server published
them; calls, reads and prompt gets are decided and journaled, and an unknown tool name is journaled
as refused. Its progress and log messages reach the agent's call.

One agent session for the whole module (starting the Node.js server is the slow part); each test
reads what it saw.
"""

from __future__ import annotations

import json
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.logging import LogMessage
from mcp.shared.exceptions import MCPError
from third_party_servers import NODE_BIN, everything_server, require

from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import Entry, RunStore
from hatp_journal.toolkit import SigningKey

# Everything is allowed: this module is about what passes through, not about what is held.
POLICY = {"autonomy": {"unknown": "allow", "read": "allow", "none": "allow", "compensate": "allow"}}
STATIC = "demo://resource/static/document/architecture.md"
DYNAMIC = "demo://resource/dynamic/text/1"
REFUSED = "demo://resource/dynamic/text/abc"  # matches the template; the server knows no such resource


@dataclass
class Seen:
    """What the server published (asked directly) and what the agent saw through the Recorder."""

    published: dict[str, Any] = field(default_factory=dict)
    through: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)


def listed(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]


async def listings(client: Client[Any]) -> dict[str, Any]:
    return {
        "tools": listed(await client.list_tools()),
        "resources": listed(await client.list_resources()),
        "templates": listed(await client.list_resource_templates()),
        "prompts": listed(await client.list_prompts()),
    }


async def session(tmp: Path) -> Seen:
    seen = Seen()

    async def sampled(messages: Any, params: Any, context: Any) -> str:
        return "sampled"

    # Declaring what the Recorder declares: the server publishes its tools that ask the client too.
    asking: dict[str, Any] = {"sampling_handler": sampled, "elicitation_handler": sampled, "roots": []}
    async with Client(everything_server(), **asking) as direct:
        seen.published = await listings(direct)
    command = str(require(NODE_BIN / "mcp-server-everything"))
    config = RecorderConfig(
        recorder=RecorderSection(agent="tester", principal="human://acme.com/dana"),
        servers={"every": ServerConfig(command=command, args=["stdio"], env=dict(os.environ))},
    )
    store = RunStore(tmp / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=Policy.model_validate(POLICY))
    try:
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            heard: list[LogMessage] = []

            async def logged(message: LogMessage) -> None:
                heard.append(message)

            async with Client(mcp, log_handler=logged) as agent:
                seen.through = await listings(agent)
                seen.answers["structured"] = await agent.call_tool_mcp(
                    "every_get-structured-content", {"location": "Chicago"}
                )
                seen.answers["static"] = await agent.read_resource(STATIC)
                seen.answers["dynamic"] = await agent.read_resource(DYNAMIC)
                try:
                    await agent.read_resource(REFUSED)
                except MCPError as error:  # the server's refusal, passed on
                    seen.answers["refused read"] = error
                seen.answers["prompt"] = await agent.get_prompt("every_args-prompt", {"city": "Oslo"})
                seen.answers["unknown"] = await agent.call_tool_mcp("every_no-such-tool", {"x": 1})
                progress: list[float] = []

                async def followed(done: float, total: float | None, message: str | None) -> None:
                    progress.append(done)

                seen.answers["long"] = await agent.call_tool_mcp(
                    "every_trigger-long-running-operation",
                    {"duration": 0.2, "steps": 2},
                    progress_handler=followed,
                )
                seen.answers["progress"] = progress
                # Its first message is sent during the call that turns the logging on (then every 5s).
                seen.answers["logging on"] = await agent.call_tool_mcp("every_toggle-simulated-logging", {})
                seen.answers["logs"] = list(heard)
                await agent.call_tool_mcp("every_toggle-simulated-logging", {})  # off again
        assert recorder.run_id is not None
        seen.entries = store.entries(recorder.run_id)
    finally:
        recorder.close()
        store.dispose()
    return seen


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    return anyio.run(session, tmp_path_factory.mktemp("everything"))


def test_the_agent_sees_every_tool_as_published_with_output_schema_title_annotations_and_meta(
    seen: Seen,
) -> None:
    through = {
        t["name"].removeprefix("every_"): t for t in seen.through["tools"] if t["name"].startswith("every_")
    }
    assert len(through) == len(seen.published["tools"])
    for tool in seen.published["tools"]:
        mirrored = {**through[tool["name"]], "name": tool["name"]}
        # The Recorder answers every call itself, so it offers no MCP tasks: ``execution`` is its own;
        # the hints are the host's (docs/policy.md, "What the agent sees").
        assert {k: v for k, v in mirrored.items() if k not in ("execution", "annotations")} == {
            k: v for k, v in tool.items() if k not in ("execution", "annotations")
        }
        # Nothing classifies an untrusted server's tools: R4, whatever the server hinted.
        hints = {**tool.get("annotations", {}), "readOnlyHint": False, "destructiveHint": True}
        assert mirrored["annotations"] == hints, tool["name"]
    structured = through["get-structured-content"]
    assert structured["outputSchema"]["required"] == ["temperature", "conditions", "humidity"]
    assert not any("fastmcp" in json.dumps(tool.get("_meta", {})) for tool in through.values())


def test_the_agent_sees_the_resources_templates_and_prompts_as_published(seen: Seen) -> None:
    assert seen.through["resources"] == seen.published["resources"]
    assert seen.through["templates"] == seen.published["templates"]
    prompts = [{**p, "name": p["name"].removeprefix("every_")} for p in seen.through["prompts"]]
    assert prompts == seen.published["prompts"]


def test_a_call_is_answered_with_its_structured_content_and_journaled(seen: Seen) -> None:
    answer = seen.answers["structured"]
    assert not answer.is_error
    assert set(answer.structured_content) == {"temperature", "conditions", "humidity"}
    [call] = [e for e in seen.entries if e.kind == "call" and e.body["tool"] == "get-structured-content"]
    assert call.body["arguments"] == {"location": "Chicago"}
    assert call.body["outcome"] == {"status": "ok"}


def test_resource_reads_are_decided_as_unclassified_calls_forwarded_and_journaled(seen: Seen) -> None:
    assert seen.answers["static"][0].text
    assert seen.answers["dynamic"][0].text
    reads = [e.body for e in seen.entries if e.kind == "call" and e.body["tool"] == "resources/read"]
    assert [r["arguments"]["uri"] for r in reads] == [STATIC, DYNAMIC, REFUSED]
    # No registry file classifies the server: R4, let through only because this policy allows unknown.
    assert all(r["intake"] == {"status": "absent", "kind": "unknown"} for r in reads)
    assert {(r["decision"]["action"], r["decision"]["reversibility"]["rule"]) for r in reads} == {
        ("allow", "unknown")
    }
    assert [r["outcome"]["status"] for r in reads] == ["ok", "ok", "error"]


def test_a_read_the_server_refuses_reaches_the_agent_as_an_error_and_is_journaled_as_failed(
    seen: Seen,
) -> None:
    assert "Unknown resource" in str(seen.answers["refused read"])
    [refused] = [e.body for e in seen.entries if e.body.get("arguments") == {"uri": REFUSED}]
    assert refused["outcome"]["status"] == "error"
    assert "Unknown resource" in refused["outcome"]["error"]


def test_a_prompt_is_forwarded(seen: Seen) -> None:
    [message] = seen.answers["prompt"].messages
    assert "Oslo" in message.content.text


def test_an_unknown_tool_name_is_refused_and_journaled_as_refused(seen: Seen) -> None:
    answer = seen.answers["unknown"]
    assert answer.is_error
    assert answer.structured_content["code"] == "UNKNOWN_TOOL"
    [refused] = [e for e in seen.entries if e.kind == "refused"]
    assert (refused.body["tool"], refused.body["code"]) == ("every_no-such-tool", "UNKNOWN_TOOL")
    assert refused.id == answer.structured_content["entry"]


def test_the_servers_progress_notifications_reach_the_agent_that_asked_for_them(seen: Seen) -> None:
    assert not seen.answers["long"].is_error
    assert seen.answers["progress"] == [1, 2]


def test_the_servers_log_message_during_a_call_reaches_the_agent(seen: Seen) -> None:
    assert not seen.answers["logging on"].is_error
    [message] = seen.answers["logs"]
    levels = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
    assert message.level in levels
    assert isinstance(message.data, str)
    toggles = [e for e in seen.entries if e.kind == "call" and e.body["tool"] == "toggle-simulated-logging"]
    assert [e.body["outcome"] for e in toggles] == [{"status": "ok"}] * 2
