"""Playwright's browser server (``@playwright/mcp``) driving Debian's Chromium behind the Recorder, with
the shipped registry entry: reading the page goes through, acting on it or sending anything waits for a
person, and a read that would write a file the agent names waits too. One browser for the module,
on pages served on this machine."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from host_undo_org import HostOrg
from local_site import local_site
from third_party_servers import NODE_BIN, playwright_args, require, served

from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.policy.registry import shipped
from hatp_journal.recorder.record import Entry

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLAYWRIGHT = "@playwright/mcp"
FORM = """<html><head><title>Order</title></head><body>
<h1>Order form</h1>
<label>Name <input id="name"></label>
<button onclick="document.getElementById('said').textContent = 'Order placed'">Place order</button>
<p id="said">Nothing ordered yet</p>
</body></html>"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("playwright")
    workspace = root / "workspace"
    workspace.mkdir()
    command = str(require(NODE_BIN / "playwright-mcp"))
    args = playwright_args(root / "output")
    servers = {"web": ServerConfig(command=command, args=args, cwd=str(workspace), timeout_seconds=120)}
    org = HostOrg.make(root, servers, {"registry": {"servers": {"web": PLAYWRIGHT}}})
    told: dict[str, Any] = {"org": org, "workspace": workspace}

    async def story() -> None:
        with local_site({"/form.html": FORM}) as site:
            url = site.url("/form.html")
            async with AsyncExitStack() as stack:
                recorder, agent = await org.session(stack)
                call = agent.call_tool_mcp
                told["listed"] = {tool.name: tool for tool in await agent.list_tools()}
                told["tabs"] = await call("web_browser_tabs", {"action": "list"})
                told["navigate"] = await call("web_browser_navigate", {"url": url})
                told["before approval"] = list(site.asked)
                org.approve_call(told["navigate"])
                told["navigated"] = await call("web_browser_navigate", {"url": url})
                told["snapshot"] = await call("web_browser_snapshot", {})
                told["to a file"] = await call("web_browser_snapshot", {"filename": "page.md"})
                told["resize"] = await call("web_browser_resize", {"width": 800, "height": 600})
                button = {"element": "Place order", "target": "button"}
                told["click"] = await call("web_browser_click", button)
                told["type"] = await call("web_browser_type", {"target": "#name", "text": "Dana"})
                told["after"] = await call("web_browser_snapshot", {})
                told["run"] = recorder.run_id
            told["asked"] = list(site.asked)

    anyio.run(story)
    return told


def decided(world: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    """The decisions on ``tool`` in the order the calls came, as the Run Record says."""
    org: HostOrg = world["org"]
    entries: list[Entry] = org.store.entries(world["run"])
    decisions = [e.body["decision"] for e in entries if e.body.get("tool") == tool]
    return [decision for decision in decisions if "reversibility" in decision]


def test_the_shipped_entry_lists_exactly_the_servers_tools_and_their_arguments(world: dict[str, Any]) -> None:
    listed = served(world["listed"], "web")
    entries = shipped()[PLAYWRIGHT].file.tools

    assert set(entries) == set(listed)
    for name, entry in entries.items():
        assert set(entry.arguments) == set(listed[name].input_schema.get("properties", {})), name


def test_reading_the_page_goes_through_as_r0_by_the_registrys_argument_rule(world: dict[str, Any]) -> None:
    allowed = [d["reversibility"] for d in decided(world, "browser_snapshot") if d["action"] == "allow"]
    [first, second] = allowed
    [tabs] = decided(world, "browser_tabs")

    assert not world["snapshot"].is_error
    assert "Order form" in world["snapshot"].content[0].text
    assert (first["class"], first["rule"]) == ("R0", "registry-argument-rule")
    assert first["evidence"]["argument"] == "filename"
    assert second["class"] == "R0"
    assert (tabs["action"], tabs["reversibility"]["class"]) == ("allow", "R0")


def test_navigating_is_a_disclosure_that_waits_for_a_person_and_no_request_leaves_before(
    world: dict[str, Any],
) -> None:
    [asked] = decided(world, "browser_navigate")
    reversibility = asked["reversibility"]

    assert world["navigate"].structured_content["status"] == "pending_approval"
    assert (reversibility["class"], reversibility["disclosure"]) == ("R4", True)
    assert [reason["code"] for reason in asked["reasons"]] == ["NEVER_AUTONOMOUS"]
    assert world["before approval"] == []
    assert not world["navigated"].is_error
    assert "/form.html" in world["asked"]


def test_a_snapshot_written_to_a_file_the_agent_names_waits_and_writes_nothing(world: dict[str, Any]) -> None:
    [to_a_file] = [d for d in decided(world, "browser_snapshot") if d["action"] != "allow"]

    assert world["to a file"].structured_content["status"] == "pending_approval"
    assert (to_a_file["reversibility"]["class"], to_a_file["reversibility"]["rule"]) == ("R4", "registry")
    assert not (world["workspace"] / "page.md").exists()


def test_acting_on_the_page_waits_and_the_page_is_left_as_it_was(world: dict[str, Any]) -> None:
    [click] = decided(world, "browser_click")
    [typed] = decided(world, "browser_type")

    assert world["click"].structured_content["status"] == "pending_approval"
    assert world["type"].structured_content["status"] == "pending_approval"
    assert (click["reversibility"]["class"], click["reversibility"]["disclosure"]) == ("R4", False)
    assert (typed["reversibility"]["class"], typed["reversibility"]["disclosure"]) == ("R4", True)
    assert "Nothing ordered yet" in world["after"].content[0].text


def test_resizing_the_window_is_restorable_and_goes_through_with_a_notice(world: dict[str, Any]) -> None:
    [resize] = decided(world, "browser_resize")

    assert not world["resize"].is_error
    assert (resize["action"], resize["reversibility"]["class"]) == ("allow", "R1")
    assert [reason["code"] for reason in resize["reasons"]] == ["NOTIFY"]


def test_the_agent_sees_the_hosts_hints_not_the_servers(world: dict[str, Any]) -> None:
    hints = {name: tool.annotations for name, tool in world["listed"].items() if name.startswith("web_")}

    assert hints["web_browser_wait_for"].read_only_hint is True
    assert hints["web_browser_snapshot"].read_only_hint is False  # R0 only without a file name
    assert hints["web_browser_snapshot"].destructive_hint is True
    assert hints["web_browser_resize"].destructive_hint is False  # R1; the server says destructive
    assert hints["web_browser_navigate"].destructive_hint is True
