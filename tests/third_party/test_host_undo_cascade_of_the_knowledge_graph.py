"""The knowledge-graph server's delete_entities also deletes every relation naming a deleted entity
(its cascade, declared in the shipped registry). A host undo of a create must not take with it a
relation that existed before the call: such an undo is a conflict naming the relation by its JSON
Pointer, nothing is removed, and no override lifts it. Against the real server behind the Recorder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from graph_machine import memory_policy, memory_servers, read_graph, write_graph
from host_undo_org import HostOrg, statuses
from third_party_servers import NODE_BIN, require

from hatp_journal.recorder.changes.host_cascade import DID_NOT_MAKE
from hatp_journal.recorder.changes.host_undo import HOST_MEMBER
from hatp_journal.recorder.undo.planner import UndoRequest

CY_KNEW_ADA = {"from": "Cy", "to": "Ada", "relationType": "knew"}


def entity(name: str) -> dict[str, Any]:
    return {"name": name, "entityType": "p", "observations": []}


def calls(org: HostOrg, run: str) -> list[str]:
    return [e.id for e in org.store.entries(run) if e.kind == "call"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("graph-cascade")
    memory = root / "memory.jsonl"
    org = HostOrg.make(root, memory_servers(require(NODE_BIN / "mcp-server-memory"), memory), memory_policy())
    told: dict[str, Any] = {}

    async def stories() -> None:
        async with org.shared() as shared:

            async def call(tool: str, arguments: dict[str, Any]) -> None:
                answer = await shared.agent.call_tool_mcp(f"kg_{tool}", arguments)
                assert not answer.is_error, answer

            async def run_of(name: str, story: Any) -> None:
                shared.next_run()
                told[name] = await story(call, shared.servers, shared.recorder)

            await run_of("colleague", lambda c, s, r: colleagues_dangling_relation(org, memory, c, s, r))
            await run_of("unrelated", lambda c, s, r: colleagues_unrelated_relation(org, memory, c, s, r))
            await run_of("own", lambda c, s, r: agents_own_relation(org, memory, c, s, r))
            await run_of("since", lambda c, s, r: colleagues_relation_since(org, memory, c, s, r))
            await run_of("machine", lambda c, s, r: the_machines_failing_sequence(org, memory, c, s, r))
            await run_of(
                "behind", lambda c, s, r: a_cascade_conflict_after_an_earlier_undo(org, memory, c, s, r)
            )
            await run_of(
                "edited", lambda c, s, r: a_colleagues_edit_after_an_earlier_undo(org, memory, c, s, r)
            )

    anyio.run(stories)
    return told


async def colleagues_dangling_relation(org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any) -> Any:
    """The colleague relates Cy to her Ada while no Cy exists; the agent then creates Cy."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": [CY_KNEW_ADA]})
    await call("create_entities", {"entities": [entity("Cy")]})
    run = rec.run_id
    told: dict[str, Any] = {"calls": calls(org, run), "run": run}
    told["entries"] = list(org.store.entries(run))
    told["plain"] = await org.undo(servers, run, UndoRequest(steps=(1,)))
    told["after_plain"] = read_graph(memory)
    told["overridden"] = await org.undo(servers, run, UndoRequest(steps=(1,)), overrides=tuple(told["calls"]))
    told["after_overridden"] = read_graph(memory)
    return told


async def colleagues_unrelated_relation(org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any) -> Any:
    """The colleague's relation names only her Ada: deleting the agent's Cy takes nothing of hers."""
    ada_met_ada = {"from": "Ada", "to": "Ada", "relationType": "met"}
    write_graph(memory, {"entities": [entity("Ada")], "relations": [ada_met_ada]})
    await call("create_entities", {"entities": [entity("Cy")]})
    _, reversal = await org.undo(servers, rec.run_id, UndoRequest(steps=(1,)))
    return {"statuses": statuses(reversal), "after": read_graph(memory)}


async def colleagues_relation_since(org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any) -> Any:
    """The agent creates Cy; then the colleague relates her Ada to Cy; the undo is overridden."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": []})
    await call("create_entities", {"entities": [entity("Cy")]})
    ada_knew_cy = {"from": "Ada", "to": "Cy", "relationType": "knew"}
    write_graph(memory, {"entities": [entity("Ada"), entity("Cy")], "relations": [ada_knew_cy]})
    run = rec.run_id
    plan, reversal = await org.undo(servers, run, UndoRequest(steps=(1,)), overrides=tuple(calls(org, run)))
    return {"plan": plan, "reversal": reversal, "after": read_graph(memory), "relation": ada_knew_cy}


async def agents_own_relation(org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any) -> Any:
    """The agent creates Cy, then relates Cy to Ada: undone from step 1, the relation goes first."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": []})
    await call("create_entities", {"entities": [entity("Cy")]})
    await call("create_relations", {"relations": [CY_KNEW_ADA]})
    plan, reversal = await org.undo(servers, rec.run_id, UndoRequest(from_step=1))
    return {"plan": plan, "statuses": statuses(reversal), "after": read_graph(memory)}


async def the_machines_failing_sequence(org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any) -> Any:
    """graph_machine.py's example that broke the invariant: the agent relates Cy to Ada while no Cy
    exists (step 1), later creates Cy (step 8), and everything from step 1 is undone."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": []})
    await call("create_relations", {"relations": [CY_KNEW_ADA]})
    for _ in range(3):
        await call("create_entities", {"entities": [entity("Ada")]})
    await call("create_relations", {"relations": [{"from": "Ada", "to": "Ada", "relationType": "knew"}]})
    await call("create_entities", {"entities": [entity("Ada")]})
    await call("create_entities", {"entities": [entity("Bo")]})
    run = rec.run_id
    await org.undo(servers, run, UndoRequest(from_step=6))
    await call("create_entities", {"entities": [entity("Cy"), entity("Ada")]})
    before = read_graph(memory)
    plan, reversal = await org.undo(servers, run, UndoRequest(from_step=1))
    return {
        "calls": calls(org, run),
        "before": before,
        "plan": plan,
        "statuses": statuses(reversal) if reversal is not None else {},
        "reversal": reversal,
        "after": read_graph(memory),
    }


async def a_cascade_conflict_after_an_earlier_undo(
    org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any
) -> Any:
    """The colleague has related Cy to her Ada while no Cy exists. The agent creates Bo (step 1) and
    Eve (step 2), and step 2 is undone; the agent then creates Cy (step 3). Everything from step 1 is
    undone: step 3 stays (its cascade), and Bo's create, which step 3 followed on the graph (through
    the undone step 2), can't be undone either: nobody else changed the graph since it."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": [CY_KNEW_ADA]})
    await call("create_entities", {"entities": [entity("Bo")]})
    await call("create_entities", {"entities": [entity("Eve")]})
    run = rec.run_id
    await org.undo(servers, run, UndoRequest(from_step=2))
    await call("create_entities", {"entities": [entity("Cy")]})
    before = read_graph(memory)
    plan, reversal = await org.undo(servers, run, UndoRequest(from_step=1))
    lines = {line["entry"]: line for line in reversal.body["steps"]} if reversal is not None else {}
    return {
        "calls": calls(org, run),
        "plan": plan,
        "lines": lines,
        "before": before,
        "after": read_graph(memory),
    }


async def a_colleagues_edit_after_an_earlier_undo(
    org: HostOrg, memory: Path, call: Any, servers: Any, rec: Any
) -> Any:
    """As above, but the colleague adds her Zed to the graph instead and the agent creates nothing
    more: Bo's create has nothing later that stays, and the graph changed since it."""
    write_graph(memory, {"entities": [entity("Ada")], "relations": []})
    await call("create_entities", {"entities": [entity("Bo")]})
    await call("create_entities", {"entities": [entity("Eve")]})
    run = rec.run_id
    await org.undo(servers, run, UndoRequest(from_step=2))
    write_graph(memory, {"entities": [entity("Ada"), entity("Bo"), entity("Zed")], "relations": []})
    plan, reversal = await org.undo(servers, run, UndoRequest(from_step=1))
    lines = {line["entry"]: line for line in reversal.body["steps"]} if reversal is not None else {}
    return {"calls": calls(org, run), "plan": plan, "lines": lines, "after": read_graph(memory)}


def cascade_message(path: str, relation: dict[str, str]) -> str:
    text = json.dumps(relation, sort_keys=True, separators=(",", ":"))
    return f"undoing it would also remove {path} {text}, {DID_NOT_MAKE}"


def test_the_create_journals_the_cascade_of_its_undo_with_the_names_it_added(world: dict[str, Any]) -> None:
    told = world["colleague"]
    [create] = [e for e in told["entries"] if e.kind == "call"]

    assert create.body[HOST_MEMBER]["cascade"] == [
        {"path": "/relations", "matchAny": ["from", "to"], "values": ["Cy"]}
    ]
    assert told["calls"] == [create.id]


def test_undoing_a_create_whose_delete_would_take_a_colleagues_relation_is_a_conflict_naming_it(
    world: dict[str, Any],
) -> None:
    told = world["colleague"]
    plan, reversal = told["plain"]
    [conflict] = plan["conflicts"]

    assert plan["steps"] == []
    assert conflict["entry"] == told["calls"][0]
    assert conflict["changes"] == [{"field": "/relations/0", "expected": CY_KNEW_ADA, "now": "(absent)"}]
    assert conflict["message"].startswith(cascade_message("/relations/0", CY_KNEW_ADA))
    [line] = reversal.body["steps"]
    assert (line["status"], line["receipt"]["code"]) == ("conflicted", "UNDO_CONFLICT")
    assert "/relations/0" in line["reason"]
    assert told["after_plain"] == {"entities": [entity("Ada"), entity("Cy")], "relations": [CY_KNEW_ADA]}


def test_an_override_does_not_let_the_cascade_remove_what_the_call_did_not_make(
    world: dict[str, Any],
) -> None:
    told = world["colleague"]
    _, reversal = told["overridden"]
    [line] = reversal.body["steps"]

    assert line["status"] == "conflicted"
    assert line["reason"].startswith(cascade_message("/relations/0", CY_KNEW_ADA))
    assert told["after_overridden"] == {"entities": [entity("Ada"), entity("Cy")], "relations": [CY_KNEW_ADA]}


def test_a_colleagues_relation_not_naming_the_created_entity_does_not_stop_its_undo(
    world: dict[str, Any],
) -> None:
    told = world["unrelated"]

    assert list(told["statuses"].values()) == ["reversed"]
    assert told["after"] == {
        "entities": [entity("Ada")],
        "relations": [{"from": "Ada", "to": "Ada", "relationType": "met"}],
    }


def test_the_agents_own_later_relation_is_undone_first_and_the_create_after_it_without_conflict(
    world: dict[str, Any],
) -> None:
    told = world["own"]

    assert told["plan"]["conflicts"] == []
    assert sorted(told["statuses"].values()) == ["reversed", "reversed"]
    assert told["after"] == {"entities": [entity("Ada")], "relations": []}


def test_the_machines_failing_sequence_ends_in_the_documented_cascade_conflict_and_removes_nothing(
    world: dict[str, Any],
) -> None:
    told = world["machine"]
    relate, *_, create_cy = told["calls"]
    plan = told["plan"]

    # step 8 created Cy; its undo would take the relation step 1 made before Cy existed
    [conflict] = plan["conflicts"]
    assert conflict["entry"] == create_cy
    assert conflict["message"].startswith(cascade_message("/relations/0", CY_KNEW_ADA))
    assert told["statuses"][create_cy] == "conflicted"
    # what stays keeps the earlier steps on the same graph from being undone: none of them ran
    assert told["statuses"][relate] == "skipped"
    assert "reversed" not in told["statuses"].values()
    assert told["after"] == told["before"]
    assert CY_KNEW_ADA in told["after"]["relations"]


def test_an_overridden_undo_does_not_delete_a_relation_a_colleague_made_to_the_entity_since(
    world: dict[str, Any],
) -> None:
    told = world["since"]
    [conflict] = told["plan"]["conflicts"]  # changed since the call: the usual conflict, overridden
    [line] = told["reversal"].body["steps"]

    assert "changed since the call" in conflict["message"]
    assert line["status"] == "conflicted"
    assert line["reason"].startswith(cascade_message("/relations/0", told["relation"]))
    assert line["receipt"]["operation"] == "compensate"
    assert told["after"] == {"entities": [entity("Ada"), entity("Cy")], "relations": [told["relation"]]}


def test_a_step_before_a_cascade_conflict_reads_skipped_naming_the_step_that_stays_not_conflicted(
    world: dict[str, Any],
) -> None:
    told = world["behind"]
    create_bo, create_eve, create_cy = told["calls"]
    plan, lines = told["plan"], told["lines"]

    # the plan the approver reads says so before anything runs
    assert [c["entry"] for c in plan["conflicts"]] == [create_cy]
    assert [(b["entry"], b["keptFor"]) for b in plan["blocked"]] == [(create_bo, [create_cy])]
    assert plan["steps"] == []
    assert (lines[create_cy]["status"], lines[create_eve]["status"]) == ("conflicted", "skipped")
    assert lines[create_eve]["reason"] == "already undone"
    assert (lines[create_bo]["status"], lines[create_bo]["reason"]) == (
        "skipped",
        f"relied on by {create_cy}",
    )
    assert told["after"] == told["before"]


def test_the_machines_failing_sequence_skips_every_earlier_step_on_the_graph_and_conflicts_none(
    world: dict[str, Any],
) -> None:
    told = world["machine"]
    lines = {line["entry"]: line for line in told["reversal"].body["steps"]}
    relate_ada, create_bo, create_cy = told["calls"][4], told["calls"][6], told["calls"][-1]

    assert [entry for entry, line in lines.items() if line["status"] == "conflicted"] == [create_cy]
    assert all(line["status"] == "skipped" for entry, line in lines.items() if entry != create_cy)
    # step 8 followed step 5 on the graph through step 7, which the earlier undo undid
    assert lines[create_bo]["reason"] == "already undone"
    assert lines[relate_ada]["reason"] == f"relied on by {create_cy}"
    assert (relate_ada, [create_cy]) in [(b["entry"], b["keptFor"]) for b in told["plan"]["blocked"]]


def test_a_colleagues_edit_of_the_graph_after_an_earlier_undo_still_reads_conflicted(
    world: dict[str, Any],
) -> None:
    told = world["edited"]
    create_bo, create_eve = told["calls"]
    lines = told["lines"]

    assert [c["entry"] for c in told["plan"]["conflicts"]] == [create_bo]
    assert lines[create_eve]["status"] == "skipped"
    assert lines[create_bo]["status"] == "conflicted"
    assert "changed since the call" in lines[create_bo]["reason"]
    assert told["after"] == {"entities": [entity("Ada"), entity("Bo"), entity("Zed")], "relations": []}
