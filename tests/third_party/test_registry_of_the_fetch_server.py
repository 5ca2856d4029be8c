"""The real fetch server (``mcp-server-fetch``, from its own virtual environment) behind the Recorder
with the shipped registry entry: a fetch is a disclosure, so it waits for a person and nothing leaves
the machine before; approved, it reads a page served on this machine. Once for the module."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_undo_org import HostOrg
from local_site import local_site
from third_party_servers import FETCH_VENV, fetch_args, fetch_env, require, served

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.policy import PolicyFileError, load_policy
from hatp_journal.recorder.policy.registry import shipped

pytestmark = pytest.mark.slow

FETCH = "mcp-server-fetch"
PAGE = (
    "<html><head><title>Notes</title></head><body><article><h1>Release notes</h1>"
    + ("<p>The lamp ships on Monday with a longer cable and a brighter bulb.</p>" * 3)
    + "</article></body></html>"
)
PAGES = {"/robots.txt": "User-agent: *\nAllow: /\n", "/notes.html": PAGE}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("fetch")
    command = str(require(FETCH_VENV / "bin" / "mcp-server-fetch"))
    servers = {"web": ServerConfig(command=command, args=fetch_args(), env=fetch_env())}
    org = HostOrg.make(root, servers, {"registry": {"servers": {"web": FETCH}}})
    told: dict[str, Any] = {"org": org, "root": root}

    async def story() -> None:
        with local_site(PAGES) as site:
            told["url"] = url = site.url("/notes.html")
            async with AsyncExitStack() as stack:
                recorder, agent = await org.session(stack)
                told["listed"] = {tool.name: tool for tool in await agent.list_tools()}
                told["asked"] = await agent.call_tool_mcp("web_fetch", {"url": url})
                told["before approval"] = list(site.asked)
                org.approve_call(told["asked"])
                told["fetched"] = await agent.call_tool_mcp("web_fetch", {"url": url})
                told["run"] = recorder.run_id
            told["after approval"] = list(site.asked)

    anyio.run(story)
    return told


def test_the_shipped_entry_lists_exactly_the_servers_tools_and_their_arguments(world: dict[str, Any]) -> None:
    listed = served(world["listed"], "web")
    entries = shipped()[FETCH].file.tools

    assert set(entries) == set(listed)
    for name, entry in entries.items():
        assert set(entry.arguments) == set(listed[name].input_schema.get("properties", {})), name


def test_a_fetch_is_a_disclosure_that_waits_for_a_person_and_nothing_leaves_before(
    world: dict[str, Any],
) -> None:
    asked = world["asked"].structured_content
    org: HostOrg = world["org"]
    [ask] = [entry for entry in org.store.entries(world["run"]) if entry.kind == "ask"]
    reversibility = ask.body["decision"]["reversibility"]

    assert asked["status"] == "pending_approval"
    assert [reason["code"] for reason in ask.body["decision"]["reasons"]] == ["NEVER_AUTONOMOUS"]
    assert (reversibility["class"], reversibility["rule"]) == ("R4", "registry")
    assert reversibility["disclosure"] is True
    assert reversibility["evidence"]["source"] == "mcp_server_fetch/server.py:456"
    assert world["before approval"] == []


def test_an_approved_fetch_reads_the_page_served_on_this_machine(world: dict[str, Any]) -> None:
    fetched = world["fetched"]

    assert not fetched.is_error, fetched.content
    assert "brighter bulb" in fetched.content[0].text
    assert world["after approval"] == ["/robots.txt", "/notes.html"]


def test_the_agent_sees_the_fetch_as_destructive_though_the_server_says_read(world: dict[str, Any]) -> None:
    hints = world["listed"]["web_fetch"].annotations

    assert hints.read_only_hint is False
    assert hints.destructive_hint is True
    assert hints.open_world_hint is True  # the server's own, passed on: it grants nothing


def test_no_class_override_lowers_the_fetch_disclosure(tmp_path: Path) -> None:
    lowering = {"server": "web", "tool": "fetch", "class": "R0", "by": "ops", "reason": "only our intranet"}
    policy = {"registry": {"servers": {"web": FETCH}}, "classOverrides": [lowering]}
    (tmp_path / "policy.json").write_text(json.dumps(policy, indent=2))

    with pytest.raises(PolicyFileError, match="disclosure"):
        load_policy(tmp_path / "policy.json")
