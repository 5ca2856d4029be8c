"""The MCP servers written by others that later tests put behind the Recorder: installed by
``make setup``, started over stdio, and answering our MCP client with the tools we classify."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client
from third_party_servers import everything_server, filesystem_server, require, sqlite_server

pytestmark = pytest.mark.anyio


async def test_the_filesystem_server_writes_and_reads_a_file_in_its_allowed_directory(tmp_path: Path) -> None:
    async with Client(filesystem_server(tmp_path)) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        await client.call_tool("write_file", {"path": str(tmp_path / "notes.txt"), "content": "v1"})
        read = await client.call_tool("read_text_file", {"path": str(tmp_path / "notes.txt")})

    assert {"read_text_file", "write_file", "edit_file", "move_file"} <= set(tools)
    assert tools["read_text_file"].annotations is not None
    assert tools["read_text_file"].annotations.read_only_hint is True
    assert (tmp_path / "notes.txt").read_text() == "v1"
    assert "v1" in str(read.content)


async def test_the_filesystem_server_refuses_a_path_outside_its_allowed_directory(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    async with Client(filesystem_server(tmp_path / "inside")) as client:
        outside = {"path": str(tmp_path / "outside.txt"), "content": "x"}
        answer = await client.call_tool_mcp("write_file", outside)

    assert answer.is_error
    assert not (tmp_path / "outside.txt").exists()


async def test_the_sqlite_server_runs_from_its_own_environment_and_answers_queries(tmp_path: Path) -> None:
    async with Client(sqlite_server(tmp_path / "shop.db")) as client:
        tools = {tool.name for tool in await client.list_tools()}
        await client.call_tool("create_table", {"query": "CREATE TABLE item (name TEXT)"})
        await client.call_tool("write_query", {"query": "INSERT INTO item VALUES ('lamp')"})
        rows = await client.call_tool("read_query", {"query": "SELECT name FROM item"})

    assert {"read_query", "write_query", "create_table", "list_tables", "describe_table"} <= tools
    assert "lamp" in str(rows.content)


async def test_the_everything_server_offers_tools_resources_and_prompts() -> None:
    async with Client(everything_server()) as client:
        tools = {tool.name for tool in await client.list_tools()}
        resources = await client.list_resources()
        prompts = await client.list_prompts()
        echoed = await client.call_tool("echo", {"message": "hello"})

    assert "echo" in tools
    assert resources
    assert prompts
    assert "hello" in str(echoed.content)


def test_a_missing_server_skips_with_the_install_hint_outside_ci(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="make setup"):
        require(tmp_path / "mcp-server-missing", environ={"CI": "false"})


def test_a_missing_server_fails_the_test_in_ci(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="must run in CI"):
        require(tmp_path / "mcp-server-missing", environ={"CI": "true"})
