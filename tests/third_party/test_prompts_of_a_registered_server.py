"""Getting a prompt of a server the host classes by its registry is decided like a call: the real fetch
server's ``fetch`` prompt makes a GET, so the shipped entry classes it a disclosure (R4). Under a class
policy it is refused before anything leaves the machine; under a policy that lets unknown calls
through it is forwarded; either way the entry names the class, the rule and who said it. A prompt the
registry file does not name is R4, even from a server the host trusts (an in-memory server here);
one it names R0 is let through; one of a server no registry file classifies is R4 too. Pages come
from 127.0.0.1."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import FastMCP
from host_undo_org import HostOrg
from local_site import local_site
from mcp.shared.exceptions import MCPError
from third_party_servers import FETCH_VENV, fetch_args, fetch_env, require

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.policy.registry import shipped
from hatp_journal.recorder.record import Entry

pytestmark = pytest.mark.slow

FETCH = "mcp-server-fetch"
PAGES = {"/notes.html": "<html><body><h1>Release notes</h1><p>The lamp ships on Monday.</p></body></html>"}
# Lets every call nothing classifies through: the registry's class still goes into every entry.
LETS_UNKNOWN_THROUGH = {"unknown": "allow", "read": "allow", "none": "allow", "compensate": "allow"}


def fetch_server(trusted: bool = False) -> dict[str, ServerConfig]:
    command = str(require(FETCH_VENV / "bin" / "mcp-server-fetch"))
    return {"web": ServerConfig(command=command, args=fetch_args(), env=fetch_env(), trusted=trusted)}


def notes_server() -> FastMCP:
    """A server with one tool and two prompts, in memory: the registry below names only ``greeting``."""
    server = FastMCP("notes")

    @server.tool
    def count() -> int:
        return 3

    @server.prompt
    def greeting(name: str) -> str:
        return f"Say hello to {name}."

    @server.prompt
    def summarise(topic: str) -> str:
        return f"Summarise the notes about {topic}."

    return server


def notes_registry(root: Path) -> dict[str, Any]:
    entry = {"rationale": "checked by hand", "evidence": {"version": "1", "source": "notes.py:1"}}
    own = {
        "format": "hatp-registry/1",
        "server": {"id": "our-notes", "package": "in-memory", "version": "1"},
        "status": "reviewed",
        "tools": {"count": {"class": "R0", **entry}},
        "prompts": {"greeting": {"class": "R0", **entry, "arguments": ["name"]}},
    }
    (root / "our-notes.json").write_text(json.dumps(own, indent=2))
    return {"registry": {"files": ["our-notes.json"], "servers": {"notes": "our-notes"}}}


async def get_prompts(org: HostOrg, gets: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Get each of ``gets`` (prompt name to arguments) through the Recorder: what came back (or the
    error) by name, what the agent was listed and the run's entries."""
    seen: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        recorder, agent = await org.session(stack)
        listed = await agent.list_prompts()
        seen["listed"] = {prompt.name: [a.name for a in prompt.arguments or []] for prompt in listed}
        for name, arguments in gets.items():
            try:
                seen[name] = await agent.get_prompt(name, arguments)
            except MCPError as error:
                seen[name] = error
        seen["run"] = recorder.run_id
    seen["entries"] = org.store.entries(seen["run"]) if seen["run"] is not None else []
    return seen


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    told: dict[str, Any] = {}
    registry = {"registry": {"servers": {"web": FETCH}}}
    orgs = {
        "class policy": HostOrg.make(tmp_path_factory.mktemp("classes"), fetch_server(), registry),
        "lets unknown through": HostOrg.make(
            tmp_path_factory.mktemp("kinds"), fetch_server(), {**registry, "autonomy": LETS_UNKNOWN_THROUGH}
        ),
    }
    notes = tmp_path_factory.mktemp("notes")
    in_memory = {"notes": ServerConfig(command="in-memory", trusted=True)}
    trusted = HostOrg.make(notes, in_memory, notes_registry(notes), embedded={"notes": notes_server()})

    async def story() -> None:
        for name, org in orgs.items():
            with local_site(PAGES) as site:
                url = site.url("/notes.html")
                told[name] = await get_prompts(org, {"web_fetch": {"url": url}})
                told[name]["asked"], told[name]["url"] = list(site.asked), url
        told["trusted"] = await get_prompts(
            trusted, {"notes_summarise": {"topic": "lamps"}, "notes_greeting": {"name": "Ada"}}
        )

    anyio.run(story)
    return told


def only(entries: list[Entry], kind: str) -> Entry:
    [entry] = [entry for entry in entries if entry.kind == kind]
    return entry


def test_the_fetch_prompt_is_refused_under_a_class_policy_and_no_request_leaves(
    world: dict[str, Any],
) -> None:
    seen = world["class policy"]
    error = seen["web_fetch"]
    refused = only(seen["entries"], "refused")

    assert isinstance(error, MCPError)
    assert seen["asked"] == []
    assert error.data["code"] == "PROMPT_NOT_ALLOWED"
    assert error.data["entry"] == refused.id
    assert "is R4" in error.message
    assert "nothing was sent" in error.message
    assert (refused.body["tool"], refused.body["code"]) == ("prompts/get", "PROMPT_NOT_ALLOWED")
    assert refused.body["arguments"] == {"name": "fetch", "arguments": {"url": seen["url"]}}


def test_the_refusal_is_journaled_with_the_class_rule_and_source_of_the_registry(
    world: dict[str, Any],
) -> None:
    decision = only(world["class policy"]["entries"], "refused").body["decision"]
    reversibility = decision["reversibility"]

    assert decision["action"] == "ask"
    assert [reason["code"] for reason in decision["reasons"]] == ["NEVER_AUTONOMOUS"]
    assert (reversibility["class"], reversibility["rule"]) == ("R4", "registry")
    assert reversibility["source"] == "host-registry"
    assert reversibility["disclosure"] is True
    assert reversibility["evidence"]["prompt"] == "fetch"
    assert reversibility["evidence"]["source"] == "mcp_server_fetch/server.py:521"


def test_a_policy_that_lets_unknown_calls_through_forwards_the_prompt_journaled_with_its_class(
    world: dict[str, Any],
) -> None:
    seen = world["lets unknown through"]
    call = only(seen["entries"], "call")
    reversibility = call.body["decision"]["reversibility"]

    assert "The lamp ships on Monday" in seen["web_fetch"].messages[0].content.text
    assert seen["asked"] == ["/notes.html"]  # the prompt does not ask robots.txt: the server says so
    assert (call.body["tool"], call.body["outcome"]["status"]) == ("prompts/get", "ok")
    assert call.body["decision"]["action"] == "allow"
    assert (reversibility["class"], reversibility["rule"], reversibility["source"]) == (
        "R4",
        "registry",
        "host-registry",
    )


def test_a_prompt_the_registry_does_not_name_is_r4_even_from_a_trusted_server(world: dict[str, Any]) -> None:
    seen = world["trusted"]
    refused = only(seen["entries"], "refused")
    reversibility = refused.body["decision"]["reversibility"]

    assert seen["notes_summarise"].data["code"] == "PROMPT_NOT_ALLOWED"
    assert refused.body["arguments"] == {"name": "summarise", "arguments": {"topic": "lamps"}}
    assert (reversibility["class"], reversibility["rule"], reversibility["source"]) == (
        "R4",
        "unknown",
        "host-default",
    )


def test_a_prompt_the_registry_names_r0_is_let_through_and_journaled_with_its_class(
    world: dict[str, Any],
) -> None:
    seen = world["trusted"]
    call = only(seen["entries"], "call")
    reversibility = call.body["decision"]["reversibility"]

    assert seen["notes_greeting"].messages[0].content.text == "Say hello to Ada."
    assert call.body["arguments"] == {"name": "greeting", "arguments": {"name": "Ada"}}
    assert call.body["decision"]["action"] == "allow"
    assert (reversibility["class"], reversibility["rule"], reversibility["evidence"]["prompt"]) == (
        "R0",
        "registry",
        "greeting",
    )


def test_a_prompt_of_a_server_no_registry_classes_is_r4_refused_and_journaled(tmp_path: Path) -> None:
    org = HostOrg.make(
        tmp_path, {"notes": ServerConfig(command="in-memory")}, {}, embedded={"notes": notes_server()}
    )
    seen = anyio.run(get_prompts, org, {"notes_summarise": {"topic": "lamps"}})
    [refused] = [entry for entry in seen["entries"] if entry.kind == "refused"]
    reversibility = refused.body["decision"]["reversibility"]

    assert seen["notes_summarise"].data["code"] == "PROMPT_NOT_ALLOWED"
    assert seen["notes_summarise"].data["entry"] == refused.id
    assert refused.body["arguments"] == {"name": "summarise", "arguments": {"topic": "lamps"}}
    assert (reversibility["class"], reversibility["rule"], reversibility["source"]) == (
        "R4",
        "unknown",
        "host-default",
    )
    assert "no registry file classifies the server notes" in reversibility["rationale"]


def test_a_prompt_of_a_server_no_registry_classes_is_forwarded_and_journaled_where_the_policy_allows_r4(
    tmp_path: Path,
) -> None:
    kinds = {"autonomy": LETS_UNKNOWN_THROUGH}
    org = HostOrg.make(
        tmp_path, {"notes": ServerConfig(command="in-memory")}, kinds, embedded={"notes": notes_server()}
    )
    seen = anyio.run(get_prompts, org, {"notes_summarise": {"topic": "lamps"}})
    [call] = [entry for entry in seen["entries"] if entry.kind == "call"]

    assert seen["notes_summarise"].messages[0].content.text == "Summarise the notes about lamps."
    assert (call.body["tool"], call.body["outcome"]["status"]) == ("prompts/get", "ok")
    assert call.body["decision"]["reversibility"]["rule"] == "unknown"


def test_the_shipped_entry_names_every_prompt_of_the_server_with_its_arguments(world: dict[str, Any]) -> None:
    listed = world["class policy"]["listed"]
    entries = shipped()[FETCH].file.prompts

    assert {f"web_{name}" for name in entries} == set(listed)
    for name, entry in entries.items():
        assert set(entry.arguments) == set(listed[f"web_{name}"]), name
