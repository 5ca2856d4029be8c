"""Servers that declare nothing, behind the Recorder: the host registry classifies their real tools,
reads go through by class, writes that destroy ask, and `explain` says why."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from third_party_servers import NODE_BIN, filesystem_server, require, sqlite_server

from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import RecorderConfig, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import parse_policy
from hatp_journal.recorder.policy.registry import shipped
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.anyio

FILESYSTEM = "@modelcontextprotocol/server-filesystem"
CLASSES = {"R0": "allow", "R1": "allow-notify", "R2": "ask-or-budget", "R3": "ask", "R4": "never-autonomous"}


async def listed(transport: Any) -> dict[str, Any]:
    async with Client(transport) as client:
        return {tool.name: tool for tool in await client.list_tools()}


async def listed_prompts_and_resources(transport: Any) -> tuple[dict[str, Any], list[str]]:
    async with Client(transport) as client:
        prompts = {prompt.name: prompt for prompt in await client.list_prompts()}
        return prompts, [str(resource.uri) for resource in await client.list_resources()]


@pytest.mark.parametrize("server", ["filesystem", "sqlite"])
async def test_the_shipped_registry_lists_exactly_the_real_tools_and_their_arguments(
    server: str, tmp_path: Path
) -> None:
    if server == "filesystem":
        tools, record = await listed(filesystem_server(tmp_path)), shipped()[FILESYSTEM]
    else:
        tools, record = await listed(sqlite_server(tmp_path / "shop.db")), shipped()["mcp-server-sqlite"]

    assert set(record.file.tools) == set(tools)
    for name, entry in record.file.tools.items():
        assert set(entry.arguments) == set(tools[name].input_schema.get("properties", {})), name


async def test_the_shipped_sqlite_entry_names_the_servers_prompt_and_its_memo_resource(
    tmp_path: Path,
) -> None:
    prompts, resources = await listed_prompts_and_resources(sqlite_server(tmp_path / "shop.db"))
    record = shipped()["mcp-server-sqlite"]

    assert set(record.file.prompts) == set(prompts)
    for name, entry in record.file.prompts.items():
        assert set(entry.arguments) == {argument.name for argument in prompts[name].arguments or []}, name
    assert resources == ["memo://insights"]
    found = record.judge_resource("memo://insights")
    assert found is not None
    assert found.rclass == "R0"


async def test_an_unaware_filesystem_server_gets_reads_allowed_by_class_and_an_overwrite_asking(
    tmp_path: Path,
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("v1\n")
    command = str(require(NODE_BIN / "mcp-server-filesystem"))
    config = RecorderConfig(
        servers={
            "files": ServerConfig(command=command, args=[str(files)]),  # classified by the registry
            "hinted": ServerConfig(command=command, args=[str(files)], trusted=True),
        }
    )
    policy = parse_policy(
        json.dumps({"autonomy": {"classes": CLASSES}, "registry": {"servers": {"files": FILESYSTEM}}})
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=policy)
    notes = str(files / "notes.txt")
    async with AsyncExitStack() as stack:
        mcp = await recorder.start(stack)
        async with Client(mcp) as agent:
            read = await agent.call_tool_mcp("files_read_text_file", {"path": notes})
            hinted = await agent.call_tool_mcp("hinted_read_text_file", {"path": notes})
            edit = {"path": notes, "edits": [{"oldText": "v1", "newText": "v2"}]}
            edited = await agent.call_tool_mcp("files_edit_file", edit)
            overwrite = await agent.call_tool_mcp("files_write_file", {"path": notes, "content": "gone"})

    assert "v1" in str(read.content)
    assert "v1" in str(hinted.content)
    assert not edited.is_error
    assert overwrite.structured_content is not None
    assert overwrite.structured_content["status"] == "pending_approval"
    assert (files / "notes.txt").read_text() == "v2\n"  # edited, not overwritten
    assert recorder.run_id is not None
    decisions = [entry.body["decision"] for entry in store.entries(recorder.run_id)]
    classes = [(d["action"], d["reversibility"]["class"], d["reversibility"]["rule"]) for d in decisions]
    assert classes == [
        ("allow", "R0", "registry"),
        ("allow", "R0", "mcp-hint-read-only"),
        ("allow", "R1", "registry"),
        ("ask", "R4", "registry"),
    ]
    assert decisions[0]["reversibility"]["evidence"]["source"] == "dist/index.js:180"
    assert [reason["code"] for reason in decisions[2]["reasons"]] == ["NOTIFY"]


def test_explain_prints_the_class_rule_evidence_and_decision_of_a_real_tool(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    command = require(NODE_BIN / "mcp-server-filesystem")
    (tmp_path / "recorder.toml").write_text(
        f'[servers.files]\ncommand = "{command}"\nargs = ["{tmp_path}"]\n'
    )
    policy = {"autonomy": {"classes": CLASSES}, "registry": {"servers": {"files": FILESYSTEM}}}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    explain = ["--config", str(tmp_path / "recorder.toml"), "explain", "files"]
    dry_run = {"path": str(tmp_path / "a.txt"), "edits": [], "dryRun": True}

    code = main([*explain, "edit_file", "--args", json.dumps(dry_run), "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    said = json.loads(out)
    unknown = main([*explain, "drop_everything"])
    error = capfd.readouterr().err

    assert said["action"] == "allow"
    assert said["reversibility"]["class"] == "R0"
    assert said["reversibility"]["rule"] == "registry-argument-rule"
    assert said["reversibility"]["evidence"]["version"] == "2026.8.31"
    assert unknown == 2
    assert "UNKNOWN_TOOL" in error
