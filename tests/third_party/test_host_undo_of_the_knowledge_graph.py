"""The real knowledge-graph server (``@modelcontextprotocol/server-memory``, array-shaped tools)
behind the Recorder, undone by the host with the registry printed in docs/policy.md (example
``memory-registry``), loaded as printed: an undo removes only what the call added, a call that
changed nothing is never undone, an overridden undo keeps a colleague's change and says so, and a
read never keeps a write."""

from __future__ import annotations

import json
import re
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_undo_org import HostOrg, statuses
from third_party_servers import NODE_BIN, ROOT, require

from hatp_journal.recorder.changes.host_undo import HOST_MEMBER, NOTHING_CHANGED
from hatp_journal.recorder.changes.plan import ReversalPlan, plan_text
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.undo.planner import UndoRequest


def doc_registry() -> str:
    """The ``memory-registry`` example of docs/policy.md, as printed."""
    text = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- example: memory-registry -->\n```json\n(.*?)```", text, re.S)
    assert found is not None
    return found.group(1)


def entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def graph_file(path: Path) -> dict[str, Any]:
    """The graph as the server keeps it (one JSON object a line), in the read_graph shape."""
    graph: dict[str, Any] = {"entities": [], "relations": []}
    for line in path.read_text().splitlines() if path.exists() else []:
        item = json.loads(line)
        kind = item.pop("type")
        graph["entities" if kind == "entity" else "relations"].append(item)
    return graph


def colleague_writes(path: Path, graph: dict[str, Any]) -> None:
    """A colleague edits the graph directly, not through the Recorder."""
    lines = [json.dumps({"type": "entity", **e}) for e in graph["entities"]]
    lines += [json.dumps({"type": "relation", **r}) for r in graph["relations"]]
    path.write_text("\n".join(lines))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("knowledge-graph")
    memory = root / "memory.jsonl"
    (root / "memory.json").write_text(doc_registry())
    servers = {
        "kg": ServerConfig(
            command=str(require(NODE_BIN / "mcp-server-memory")), env={"MEMORY_FILE_PATH": str(memory)}
        )
    }
    policy = {"registry": {"files": ["memory.json"], "servers": {"kg": "team-memory"}}}
    org = HostOrg.make(root, servers, policy)
    told: dict[str, Any] = {"org": org, "memory": memory}

    async def story() -> None:
        met = {"from": "Ada", "to": "Hopper", "relationType": "met"}
        colleague_writes(
            memory,
            {"entities": [entity("Ada", "wrote the first program"), entity("Hopper")], "relations": [met]},
        )
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            call = agent.call_tool_mcp
            # step 1: Ada exists (the colleague's), Babbage is new: the call adds only Babbage
            await call("kg_create_entities", {"entities": [entity("Ada"), entity("Babbage")]})
            # step 2: a relation of the agent's
            knew = {"from": "Ada", "to": "Babbage", "relationType": "knew"}
            await call("kg_create_relations", {"relations": [knew]})
            # step 3: a read, allowed as R0 by the registry
            await call("kg_read_graph", {})
            # step 4: the colleague's relation exists already: the same create changes nothing
            await call("kg_create_relations", {"relations": [met]})
            # step 5: the agent deletes the colleague's Hopper, and with it her relation
            await call("kg_delete_entities", {"entityNames": ["Hopper"]})
            told["listed"] = await call("hatp_list_changes", {})
            recorder.close()
        run = told["run"] = recorder.run_id
        assert run is not None
        told["entries"] = {e.id: e for e in org.store.entries(run)}
        told["before_undo"] = graph_file(memory)
        async with AsyncExitStack() as stack:
            servers = org.undo_servers(stack)
            told["noop_undo"] = await org.undo(servers, run, UndoRequest(steps=(4,)))
            told["delete_undo"] = await org.undo(servers, run, UndoRequest(steps=(5,)))
            told["after_delete_undo"] = graph_file(memory)
            # the colleague adds an observation to her Ada: the graph changed since steps 1 and 2
            graph = graph_file(memory)
            graph["entities"][0]["observations"].append("left on Friday")
            colleague_writes(memory, graph)
            told["kept"] = await org.undo(servers, run, UndoRequest(steps=(2, 1)))
            ids = [e.id for e in told["entries"].values() if e.kind == "call"]
            told["overridden"] = await org.undo(
                servers, run, UndoRequest(steps=(2, 1)), overrides=(ids[1], ids[0])
            )
            told["after_override"] = graph_file(memory)
            # another run: the agent creates Cy, the colleague adds an observation to Cy, and the
            # undo is approved with an override: deleting Cy takes her observation with it
            async with AsyncExitStack() as again:
                recorder, agent = await org.session(again)
                await agent.call_tool_mcp("kg_create_entities", {"entities": [entity("Cy")]})
                recorder.close()
            second = recorder.run_id
            assert second is not None
            graph = graph_file(memory)
            graph["entities"][-1]["observations"].append("joined on Monday")
            colleague_writes(memory, graph)
            [cy] = [e.id for e in org.store.entries(second) if e.kind == "call"]
            told["overwrote"] = await org.undo(servers, second, UndoRequest(steps=(1,)), overrides=(cy,))
            told["after_overwrite"] = graph_file(memory)
            told["own_later_work"] = await undone_around_a_reversed_step(
                org, servers, memory, colleague=False
            )
            told["colleague_between"] = await undone_around_a_reversed_step(
                org, servers, memory, colleague=True
            )

    anyio.run(story)
    return told


async def undone_around_a_reversed_step(
    org: HostOrg, servers: Any, memory: Path, *, colleague: bool
) -> dict[str, Any]:
    """A run of its own on the colleague's ``Ada`` and ``Bo``: the agent creates ``Cy`` (step 1),
    deletes ``Ada`` (step 2, undone at once: ``Ada`` comes back at the end of the file), relates
    ``Ada`` to ``Cy`` (step 3), then everything from step 1 is undone. With ``colleague``, she adds
    an observation to ``Bo`` between the undo of step 2 and step 3."""
    colleague_writes(memory, {"entities": [entity("Ada"), entity("Bo")], "relations": []})
    told: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        recorder, agent = await org.session(stack)
        await agent.call_tool_mcp("kg_create_entities", {"entities": [entity("Cy")]})
        await agent.call_tool_mcp("kg_delete_entities", {"entityNames": ["Ada"]})
        run = recorder.run_id
        assert run is not None
        told["middle"] = await org.undo(servers, run, UndoRequest(steps=(2,)))
        if colleague:
            graph = graph_file(memory)
            graph["entities"][0]["observations"].append("left on Friday")
            colleague_writes(memory, graph)
        await agent.call_tool_mcp(
            "kg_create_relations", {"relations": [{"from": "Ada", "to": "Cy", "relationType": "knew"}]}
        )
        told["calls"] = [e.id for e in org.store.entries(run) if e.kind == "call"]
        told["plan"], told["reversal"] = await org.undo(servers, run, UndoRequest(from_step=1))
        told["after"] = graph_file(memory)
        recorder.close()
    return told


def calls(world: dict[str, Any]) -> list[Any]:
    return [e for e in world["entries"].values() if e.kind == "call"]


def test_the_docs_memory_registry_loads_and_classes_each_array_tool() -> None:
    from hatp_journal.recorder.policy.registry import parse_record

    record = parse_record(doc_registry(), source="docs/policy.md")

    assert {name: entry.rclass for name, entry in record.file.tools.items()} == {
        "read_graph": "R0",
        "create_entities": "R1",
        "create_relations": "R1",
        "delete_entities": "R2",
        "delete_relations": "R2",
    }


def test_a_create_of_names_a_colleague_made_first_journals_an_undo_of_only_the_new_ones(
    world: dict[str, Any],
) -> None:
    create = calls(world)[0].body[HOST_MEMBER]

    assert create["inverse"] == {"tool": "delete_entities", "arguments": {"entityNames": ["Babbage"]}}
    assert create["summary"] == "Create entities Babbage"


def test_a_create_that_changed_nothing_is_never_planned_nor_run_and_the_colleagues_relation_stays(
    world: dict[str, Any],
) -> None:
    plan, reversal = world["noop_undo"]
    noop = calls(world)[3]

    assert noop.body[HOST_MEMBER]["after"] == noop.body[HOST_MEMBER]["before"]
    assert noop.id not in [s["entry"] for s in plan["steps"]]
    assert noop.id not in [c["entry"] for c in plan["conflicts"]]
    assert noop.id not in [n["entry"] for n in plan["notReversible"]]
    [shown] = plan["changedNothing"]  # shown to the person, as changing nothing
    assert (shown["entry"], shown["reason"]) == (noop.id, NOTHING_CHANGED)
    assert f"step 4  {shown['summary']}   ({NOTHING_CHANGED})" in plan_text(
        ReversalPlan.model_validate(plan), agent="ops-bot", principal="Dana"
    )
    assert reversal is None or noop.id not in statuses(reversal)
    assert {"from": "Ada", "to": "Hopper", "relationType": "met"} in world["after_override"]["relations"]


def test_undoing_a_delete_creates_again_only_what_it_removed(world: dict[str, Any]) -> None:
    _, reversal = world["delete_undo"]

    assert list(statuses(reversal).values()) == ["reversed"]
    assert [e["name"] for e in world["before_undo"]["entities"]] == ["Ada", "Babbage"]
    assert [e["name"] for e in world["after_delete_undo"]["entities"]] == ["Ada", "Babbage", "Hopper"]
    assert world["after_delete_undo"]["relations"] == [
        {"from": "Ada", "to": "Babbage", "relationType": "knew"},
        {"from": "Ada", "to": "Hopper", "relationType": "met"},
    ]


def test_a_colleagues_observation_since_the_create_is_a_conflict_named_by_its_json_pointer(
    world: dict[str, Any],
) -> None:
    plan, reversal = world["kept"]
    relation = calls(world)[1].id

    conflict = next(c for c in plan["conflicts"] if c["entry"] == relation)
    assert [(c["field"], c["expected"], c["now"]) for c in conflict["changes"]] == [
        ("/entities/0/observations/1", "(absent)", "left on Friday")
    ]
    assert '/entities/0/observations/1: (absent) → "left on Friday"' in conflict["message"]
    assert [s["entry"] for s in plan["alreadyReversed"]] == [calls(world)[4].id]  # the Run Record says so
    assert set(statuses(reversal).values()) == {"conflicted", "skipped"}


def test_an_overridden_undo_removes_only_the_agents_entity_and_relation_and_is_reversed_naming_what_it_kept(
    world: dict[str, Any],
) -> None:
    _, reversal = world["overridden"]
    done = statuses(reversal)

    assert [done[c.id] for c in calls(world)[:2]] == ["reversed", "reversed"]
    assert world["after_override"] == {
        "entities": [entity("Ada", "wrote the first program", "left on Friday"), entity("Hopper")],
        "relations": [{"from": "Ada", "to": "Hopper", "relationType": "met"}],
    }
    create = next(line for line in reversal.body["steps"] if line["entry"] == calls(world)[0].id)
    assert "left on Friday" in create["receipt"]["message"]


def test_a_read_the_registry_allows_as_r0_never_keeps_the_write_before_it(world: dict[str, Any]) -> None:
    plan, _ = world["kept"]

    assert plan["blocked"] == []
    assert calls(world)[2].id not in [s["entry"] for s in plan["steps"]]


def test_the_agent_is_listed_the_calls_that_changed_something_not_the_read_nor_the_one_that_changed_nothing(
    world: dict[str, Any],
) -> None:
    listed = world["listed"].structured_content["changes"]

    assert [(c["step"], c["tool"], c["undo"]) for c in listed] == [
        (1, "create_entities", "reversible"),
        (2, "create_relations", "reversible"),
        (5, "delete_entities", "reversible"),
    ]


def test_an_overridden_undo_that_takes_a_colleagues_change_with_it_says_it_overwrote_it(
    world: dict[str, Any],
) -> None:
    _, reversal = world["overwrote"]
    [line] = reversal.body["steps"]
    message = line["receipt"]["message"]

    assert line["status"] == "reversed"
    assert "Cy" not in [e["name"] for e in world["after_overwrite"]["entities"]]
    assert "the override overwrote what changed since the call" in message
    assert '"joined on Monday"' in message
    assert "kept" not in message
    assert line["receipt"]["changes"] == []


def test_a_step_the_run_itself_undid_in_between_is_no_conflict_for_the_write_before_it(
    world: dict[str, Any],
) -> None:
    told = world["own_later_work"]
    create, delete, relate = told["calls"]
    plan = told["plan"]

    assert statuses(told["middle"][1]) == {delete: "reversed"}
    assert plan["conflicts"] == [], [c["message"] for c in plan["conflicts"]]
    assert [(s["entry"], s.get("after")) for s in plan["steps"]] == [(relate, None), (create, relate)]
    assert [s["entry"] for s in plan["alreadyReversed"]] == [delete]
    done = statuses(told["reversal"])
    assert (done[relate], done[create]) == ("reversed", "reversed")
    assert sorted(e["name"] for e in told["after"]["entities"]) == ["Ada", "Bo"]
    assert told["after"]["relations"] == []


def test_a_colleagues_edit_after_a_step_the_run_undid_is_still_a_conflict_for_the_write_before_it(
    world: dict[str, Any],
) -> None:
    told = world["colleague_between"]
    create, _, relate = told["calls"]
    plan = told["plan"]

    [conflict] = plan["conflicts"]
    assert conflict["entry"] == create
    assert [s["entry"] for s in plan["steps"]] == [relate]
    done = statuses(told["reversal"])
    assert (done[relate], done[create]) == ("reversed", "conflicted")
    assert entity("Bo", "left on Friday") in told["after"]["entities"]
    assert "Cy" in [e["name"] for e in told["after"]["entities"]]
