"""The reference "everything" server behind the Recorder with the shipped registry entry: its reads go
through, a toggle goes through with a notice, and the two tools that say they only read but disclose
(the server's environment; a URL fetched) wait for a person. The entry covers every tool, those the
server offers only to a client that can answer sampling, elicitation or roots too."""

from __future__ import annotations

import json
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from host_undo_org import HostOrg
from third_party_servers import NODE_BIN, everything_server, require, served

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.policy.registry import shipped

pytestmark = pytest.mark.slow

EVERYTHING = "@modelcontextprotocol/server-everything"
TOOLS = NODE_BIN.parent / "@modelcontextprotocol" / "server-everything" / "dist" / "tools"
SECRET = "hatp-test-secret-7f3a"
STATIC = "demo://resource/static/document/architecture.md"


async def answer(*args: Any) -> str:
    """A client that can answer the server's requests (sampling, elicitation), so it offers all."""
    return "fine"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("everything")
    command = str(require(NODE_BIN / "mcp-server-everything"))
    env = {**os.environ, "EVERYTHING_TEST_TOKEN": SECRET}
    servers = {"every": ServerConfig(command=command, args=["stdio"], env=env)}
    org = HostOrg.make(root, servers, {"registry": {"servers": {"every": EVERYTHING}}})
    told: dict[str, Any] = {"org": org}

    async def story() -> None:
        able = Client(
            everything_server(), sampling_handler=answer, elicitation_handler=answer, roots=["file:///tmp"]
        )
        async with able as direct:
            told["direct"] = {tool.name: tool for tool in await direct.list_tools()}
            told["prompts"] = {
                p.name: [a.name for a in p.arguments or []] for p in await direct.list_prompts()
            }
            told["resources"] = [str(r.uri) for r in await direct.list_resources()]
            told["templates"] = [t.uri_template for t in await direct.list_resource_templates()]
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            call = agent.call_tool_mcp
            told["listed"] = {tool.name: tool for tool in await agent.list_tools()}
            told["echo"] = await call("every_echo", {"message": "hello"})
            told["env"] = await call("every_get-env", {})
            told["gzip"] = await call("every_gzip-file-as-resource", {"data": "http://127.0.0.1:9/x"})
            told["toggle"] = await call("every_toggle-simulated-logging", {})
            await call("every_toggle-simulated-logging", {})  # and off again
            told["prompt"] = await agent.get_prompt("every_args-prompt", {"city": "Oslo"})
            told["static"] = await agent.read_resource(STATIC)
            told["text"] = await agent.read_resource("demo://resource/dynamic/text/2")
            told["run"] = recorder.run_id

    anyio.run(story)
    return told


def decision(world: dict[str, Any], tool: str) -> dict[str, Any]:
    org: HostOrg = world["org"]
    found = [e.body["decision"] for e in org.store.entries(world["run"]) if e.body.get("tool") == tool]
    return dict(found[0])


def test_the_shipped_entry_classifies_every_tool_the_server_offers_with_its_arguments(
    world: dict[str, Any],
) -> None:
    entries = shipped()[EVERYTHING].file.tools
    offered: dict[str, Any] = world["direct"]

    assert set(offered) <= set(entries)
    for name, tool in offered.items():
        assert set(entries[name].arguments) == set(tool.input_schema.get("properties", {})), name
    # The rest are offered only to a client that runs requests as tasks: the source has each.
    for name in set(entries) - set(offered):
        assert (TOOLS / f"{name}.js").exists(), name
    assert set(served(world["listed"], "every")) <= set(entries)


def test_a_read_goes_through_as_r0_from_the_registry(world: dict[str, Any]) -> None:
    echo = decision(world, "echo")

    assert "hello" in world["echo"].content[0].text
    said = echo["reversibility"]
    assert (echo["action"], said["class"], said["rule"]) == ("allow", "R0", "registry")


@pytest.mark.parametrize(("tool", "key"), [("get-env", "env"), ("gzip-file-as-resource", "gzip")])
def test_a_tool_that_says_it_only_reads_but_discloses_waits_for_a_person(
    world: dict[str, Any], tool: str, key: str
) -> None:
    decided = decision(world, tool)

    assert world[key].structured_content["status"] == "pending_approval"
    assert SECRET not in str(world[key].content)
    assert (decided["reversibility"]["class"], decided["reversibility"]["disclosure"]) == ("R4", True)
    assert world["listed"][f"every_{tool}"].annotations.destructive_hint is True


def test_a_toggle_of_the_sessions_own_logging_goes_through_with_a_notice(world: dict[str, Any]) -> None:
    toggle = decision(world, "toggle-simulated-logging")

    assert not world["toggle"].is_error
    assert (toggle["action"], toggle["reversibility"]["class"]) == ("allow", "R1")
    assert [reason["code"] for reason in toggle["reasons"]] == ["NOTIFY"]


def test_the_registry_names_a_source_line_that_registers_each_tool() -> None:
    for name, entry in shipped()[EVERYTHING].file.tools.items():
        file, line = entry.evidence.source.rsplit(":", 1)
        source = Path(require(NODE_BIN)).parent / "@modelcontextprotocol" / "server-everything" / file
        lines = source.read_text().splitlines()
        assert "registerTool" in lines[int(line) - 1], name


def test_the_shipped_entry_classifies_every_prompt_the_server_offers_with_its_arguments(
    world: dict[str, Any],
) -> None:
    entries = shipped()[EVERYTHING].file.prompts

    assert set(entries) == set(world["prompts"])
    for name, arguments in world["prompts"].items():
        assert set(entries[name].arguments) == set(arguments), name


def test_a_prompt_the_registry_classes_r0_is_got_and_journaled_with_its_class(world: dict[str, Any]) -> None:
    got = decision(world, "prompts/get")

    assert "Oslo" in world["prompt"].messages[0].content.text
    assert got["action"] == "allow"
    assert (got["reversibility"]["class"], got["reversibility"]["rule"]) == ("R0", "registry")
    assert got["reversibility"]["evidence"]["prompt"] == "args-prompt"


def test_the_shipped_entry_names_every_resource_and_template_the_server_lists(world: dict[str, Any]) -> None:
    record = shipped()[EVERYTHING]

    assert world["resources"]
    for uri in world["resources"]:
        found = record.judge_resource(uri)
        assert found is not None, uri
        assert found.rclass == "R0", uri
    assert set(world["templates"]) <= set(record.file.resources)


def test_the_registry_names_a_source_line_that_registers_each_resource() -> None:
    for key, entry in shipped()[EVERYTHING].file.resources.items():
        file, line = entry.evidence.source.rsplit(":", 1)
        source = Path(require(NODE_BIN)).parent / "@modelcontextprotocol" / "server-everything" / file
        assert "registerResource" in source.read_text().splitlines()[int(line) - 1], key


def test_reads_the_registry_classes_r0_go_through_journaled_with_their_class(world: dict[str, Any]) -> None:
    org: HostOrg = world["org"]
    reads = [e.body for e in org.store.entries(world["run"]) if e.body.get("tool") == "resources/read"]

    assert world["static"][0].text
    assert world["text"][0].text
    assert [read["arguments"]["uri"] for read in reads] == [STATIC, "demo://resource/dynamic/text/2"]
    assert [read["decision"]["reversibility"]["evidence"]["resource"] for read in reads] == [
        "demo://resource/static/document/{name}",
        "demo://resource/dynamic/text/{resourceId}",
    ]
    assert {(read["decision"]["action"], read["decision"]["reversibility"]["class"]) for read in reads} == {
        ("allow", "R0")
    }


def test_explain_prints_for_gets_and_reads_the_decision_the_gateway_journaled(
    world: dict[str, Any], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org: HostOrg = world["org"]
    command = require(NODE_BIN / "mcp-server-everything")
    (tmp_path / "recorder.toml").write_text(
        f'[recorder]\npolicy = "{org.root / "policy.json"}"\ndirectory = "{org.root / "directory.json"}"\n'
        f'store = "{tmp_path / "recorder.db"}"\n[servers.every]\ncommand = "{command}"\nargs = ["stdio"]\n'
    )
    explain = ["--config", str(tmp_path / "recorder.toml"), "explain", "every"]
    journaled = {
        json.dumps(e.body["arguments"], sort_keys=True): e.body["decision"]
        for e in org.store.entries(world["run"])
        if e.body.get("tool") in ("resources/read", "prompts/get")
    }
    told: dict[str, Any] = {}
    for arguments, decided in journaled.items():
        method = "resources/read" if "uri" in json.loads(arguments) else "prompts/get"
        assert main([*explain, method, "--args", arguments, "--json"]) == 0
        told[arguments] = json.loads(capfd.readouterr().out)
        assert told[arguments]["reversibility"] == decided["reversibility"], arguments
        assert told[arguments]["action"] == decided["action"], arguments
    refused = main([*explain, "resources/read", "--args", '{"uri": "demo://resource/session/x"}'])
    words = capfd.readouterr().out
    bad = main([*explain, "prompts/get", "--args", '{"uri": "x"}'])

    assert len(told) == 3
    assert refused == 0
    assert "every/resources/read: R4 (unknown)" in words
    assert "refused: RESOURCE_NOT_ALLOWED" in words
    assert bad == 2
    assert "BAD_ARGUMENTS" in capfd.readouterr().err
