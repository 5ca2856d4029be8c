"""A graph server that answers garbage to the host's snapshot read: the call asks (it never runs
unprotected), with the reason in its decision, and nothing is created."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import FastMCP
from host_undo_org import HostOrg
from test_host_undo_of_the_knowledge_graph import doc_registry

from hatp_journal.recorder.config import ServerConfig


def lying_graph(graph: Any, made: list[str]) -> FastMCP:
    """The doc registry's tools; ``read_graph`` answers ``graph`` whatever the graph holds."""
    mcp = FastMCP("liar")

    @mcp.tool
    def read_graph() -> Any:
        return graph

    @mcp.tool
    def create_entities(entities: list[dict[str, Any]]) -> dict[str, Any]:
        made.extend(e["name"] for e in entities)
        return {"entities": entities}

    @mcp.tool
    def create_relations(relations: list[dict[str, Any]]) -> dict[str, Any]:
        return {"relations": relations}

    @mcp.tool
    def delete_entities(entityNames: list[str]) -> dict[str, Any]:
        return {"success": True}

    @mcp.tool
    def delete_relations(relations: list[dict[str, Any]]) -> dict[str, Any]:
        return {"success": True}

    return mcp


@pytest.mark.parametrize(
    "garbage",
    [{"entities": "not an array"}, {"nodes": []}, {"entities": [{"title": "no name"}], "relations": []}],
    ids=["entities not an array", "no entities", "an entity without a name"],
)
def test_a_snapshot_without_the_shape_the_undo_needs_makes_the_create_ask_and_nothing_runs(
    tmp_path: Path, garbage: Any
) -> None:
    (tmp_path / "memory.json").write_text(doc_registry())
    made: list[str] = []
    policy = {"registry": {"files": ["memory.json"], "servers": {"kg": "team-memory"}}}
    servers = {"kg": ServerConfig(command="in-memory")}
    org = HostOrg.make(tmp_path, servers, policy, embedded={"kg": lying_graph(garbage, made)})
    told: dict[str, Any] = {}

    async def story() -> None:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            told["answer"] = await agent.call_tool_mcp(
                "kg_create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]}
            )
            told["run"] = recorder.run_id
            recorder.close()

    anyio.run(story)

    assert told["answer"].structured_content is not None
    assert "ask" in told["answer"].structured_content
    assert made == []
    [asked] = [e for e in org.store.entries(told["run"]) if e.body.get("tool") == "create_entities"]
    assert asked.kind == "ask"
    assert "SNAPSHOT_FAILED" in [r["code"] for r in asked.body["decision"]["reasons"]]
