"""A Hypothesis state machine over the real knowledge-graph server behind the Recorder, undone by
the host (the shipped registry): the agent's calls (creates, relations, observations, deletes,
calls that change nothing, reads), a colleague's edits made directly in the server's file, and
undo plans approved and run, with and without overrides. One Recorder session, one server and
one set of undo connections for all examples (a BlockingPortal keeps them in one event loop);
each example starts from a fresh graph file, in a run of its own.

Invariants, checked after every undo:
- no colleague change is removed unless the undo overrode a conflict; an undo that removed one
  is never reported ``reversed`` without its answer naming what the override overwrote;
- a call that changed nothing is never planned nor run;
- an undo that left what it said it would is reported ``reversed``, never failed; a failure
  names the paths that differ; a conflict comes only from a colleague's edit, or is the documented
  cascade conflict (the undo of a create would delete with it relations the call did not make,
  named by path, and nothing is removed) with the earlier steps its staying step keeps;
- reads never block: a read is never planned, never a conflict, never what keeps a step.
Used by tests/third_party/test_host_undo_state_machine.py (few examples) and
bench/host_undo_machine.py (many).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hatp_journal.recorder.changes.host_cascade import DID_NOT_MAKE
from hatp_journal.recorder.changes.host_diff import only_in, same, undone
from hatp_journal.recorder.changes.host_undo import HOST_MEMBER, changed_nothing
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.undo.planner import UndoRequest

NAMES = ("Ada", "Bo", "Cy")
TEXTS = ("x", "y")
KINDS = ("knew", "met")
MEMORY_REGISTRY = "@modelcontextprotocol/server-memory"


def memory_servers(command: Path, memory: Path) -> dict[str, ServerConfig]:
    return {"kg": ServerConfig(command=str(command), env={"MEMORY_FILE_PATH": str(memory)})}


def memory_policy() -> dict[str, Any]:
    return {"registry": {"servers": {"kg": MEMORY_REGISTRY}}}


def read_graph(path: Path) -> dict[str, Any]:
    graph: dict[str, Any] = {"entities": [], "relations": []}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip():
            item = json.loads(line)
            kind = item.pop("type")
            graph["entities" if kind == "entity" else "relations"].append(item)
    return graph


def write_graph(path: Path, graph: dict[str, Any]) -> None:
    lines = [json.dumps({"type": "entity", **e}) for e in graph["entities"]]
    lines += [json.dumps({"type": "relation", **r}) for r in graph["relations"]]
    path.write_text("\n".join(lines))


def items(graph: dict[str, Any]) -> set[tuple[str, ...]]:
    """The graph as a set of facts: entities, observations, relations."""
    found: set[tuple[str, ...]] = set()
    for e in graph["entities"]:
        found.add(("entity", e["name"]))
        found.update(("observation", e["name"], o) for o in e["observations"])
    found.update(("relation", r["from"], r["to"], r["relationType"]) for r in graph["relations"])
    return found


class GraphMachine(RuleBasedStateMachine):
    """Set ``world`` (a HostOrg, the memory file and a BlockingPortal) before running."""

    world: ClassVar[dict[str, Any]] = {}
    stats: ClassVar[dict[str, int]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.org, self.memory, self.portal = self.world["org"], self.world["memory"], self.world["portal"]
        write_graph(
            self.memory,
            {"entities": [{"name": "Ada", "entityType": "p", "observations": []}], "relations": []},
        )
        self.colleague: set[tuple[str, ...]] = {("entity", "Ada")}
        self.edited = False  # a colleague edited the graph since the run began
        shared = self.world["shared"]
        shared.next_run()  # a run of its own, on the server processes every example shares
        self.recorder, self.agent, self.servers = shared.recorder, shared.agent, shared.servers
        self.steps = 0
        self.noops: set[str] = set()  # the calls an undo of this run found had changed nothing
        self._count("examples started")

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        self.steps += 1
        self._count("agent calls")
        answer = self.portal.call(self.agent.call_tool_mcp, f"kg_{tool}", arguments)
        # What the agent deleted of hers is no longer hers: a create of the same name is the agent's.
        self.colleague &= items(read_graph(self.memory))
        return answer

    def teardown(self) -> None:
        self.stats["no-op calls seen by an undo"] = self.stats.get("no-op calls seen by an undo", 0) + len(
            self.noops
        )

    def _count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    # -- the agent ----------------------------------------------------------------------------

    @rule(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True))
    def create(self, names: list[str]) -> None:
        self._call(
            "create_entities",
            {"entities": [{"name": n, "entityType": "p", "observations": []} for n in names]},
        )

    @rule(a=st.sampled_from(NAMES), b=st.sampled_from(NAMES), kind=st.sampled_from(KINDS))
    def relate(self, a: str, b: str, kind: str) -> None:
        self._call("create_relations", {"relations": [{"from": a, "to": b, "relationType": kind}]})

    @rule(name=st.sampled_from(NAMES), text=st.sampled_from(TEXTS))
    def observe(self, name: str, text: str) -> None:
        self._call("add_observations", {"observations": [{"entityName": name, "contents": [text]}]})

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        self._call("delete_entities", {"entityNames": [name]})

    @rule(kind=st.sampled_from(["read_graph", "search_nodes"]))
    def read(self, kind: str) -> None:
        self._call(kind, {} if kind == "read_graph" else {"query": "a"})

    # -- a colleague, directly in the server's file ---------------------------------------------

    @rule(
        name=st.sampled_from(NAMES),
        text=st.sampled_from(TEXTS),
        what=st.sampled_from(["entity", "observation", "relation"]),
    )
    def colleague_edits(self, name: str, text: str, what: str) -> None:
        graph = read_graph(self.memory)
        names = [e["name"] for e in graph["entities"]]
        if what == "entity" and name not in names:
            graph["entities"].append({"name": name, "entityType": "p", "observations": []})
            self.colleague.add(("entity", name))
        elif what == "observation" and name in names:
            entity = graph["entities"][names.index(name)]
            if text not in entity["observations"]:
                entity["observations"].append(text)
                self.colleague.add(("observation", name, text))
        elif what == "relation" and name in names:
            relation = {"from": name, "to": name, "relationType": "self"}
            if relation not in graph["relations"]:
                graph["relations"].append(relation)
                self.colleague.add(("relation", name, name, "self"))
        else:
            return
        write_graph(self.memory, graph)
        self.edited = True
        self._count("colleague edits")

    # -- undo ---------------------------------------------------------------------------------

    @precondition(lambda self: self.steps > 0)
    @rule(data=st.data(), override=st.booleans())
    def undo(self, data: st.DataObject, override: bool) -> None:
        run = self.recorder.run_id
        step = data.draw(st.integers(1, self.steps), label="from step")
        entries = self.org.store.entries(run)
        calls = [e for e in entries if e.kind == "call"]
        before_graph = read_graph(self.memory)
        before = items(before_graph)
        present = before & self.colleague

        async def plan_and_run(overrides: Any) -> Any:
            return await self.org.undo(self.servers, run, UndoRequest(from_step=step), overrides)

        plan, reversal = self.portal.call(plan_and_run, ())
        last_graph = before_graph  # the graph the reversal below was planned on
        cascades: list[dict[str, Any]] = []
        for section in ("steps", "conflicts", "notReversible", "unresolved", "blocked", "alreadyReversed"):
            self.stats[f"planned as {section}"] = self.stats.get(f"planned as {section}", 0) + len(
                plan[section]
            )
        if override and plan["conflicts"]:
            self._count("overrides")
            # The steps without a conflict ran: override the conflicts of the plan approved now.
            last_graph = read_graph(self.memory)
            plan, reversal = self.portal.call(plan_and_run, _every_conflict)
            override = bool(plan["conflicts"])
        else:
            override = False
        after = items(read_graph(self.memory))
        lines = reversal.body["steps"] if reversal is not None else []
        status = {line["entry"]: line["status"] for line in lines}
        self._count("undos")
        self._count("reversed steps" if "reversed" in status.values() else "undos reversing nothing")

        noops = {e.id for e in calls if _undoable(e) and changed_nothing(e.body[HOST_MEMBER])}
        self.noops |= noops
        reads = {
            e.id
            for e in calls
            if (e.body.get("decision") or {}).get("reversibility", {}).get("class") == "R0"
        }
        self.stats["most no-op calls in one run"] = max(
            self.stats.get("most no-op calls in one run", 0), len(noops)
        )
        planned = {s["entry"] for s in plan["steps"]} | {c["entry"] for c in plan["conflicts"]}
        assert not planned & noops, f"a call that changed nothing was planned: {planned & noops}"
        assert not set(status) & noops, "a call that changed nothing was run"
        assert not planned & reads, "a read was planned"
        keepers = {e for b in plan["blocked"] for e in b["keptFor"]}
        assert not keepers & reads, "a read kept a step"

        removed = present - after
        if removed:
            self._count("colleague changes removed under override")
            assert override, f"a colleague's change was removed without an override: {removed} {lines}"
            assert (
                "reversed" not in status.values()
                or _removed_only_by_failed(status)
                or _says_it_overwrote(lines)
            ), f"an undo removed {removed} and says reversed, naming nothing it overwrote: {lines}"
        for line in lines:  # a failure names what differs: never a bare "failed"
            if line["status"] == "failed":
                self._count("steps reported failed")
                assert "/" in str(line.get("reason")), f"a failure that names nothing: {line}"
        ran = [line for line in lines if line["status"] in ("reversed", "failed")]
        if len(ran) == 1 and not override:  # one inverse ran: did it leave what it said?
            member = next(e for e in calls if e.id == ran[0]["entry"]).body[HOST_MEMBER]
            wanted = undone(before_graph, member["snapshot"], member["afterState"])
            if same(wanted, read_graph(self.memory)):
                assert ran[0]["status"] == "reversed", (
                    f"an undo that did what it said was reported failed: {ran}"
                )
        by_id = {e.id: e for e in calls}
        # what the steps this reversal undid removed and put back (an element a cascade names may
        # have come back with the undo of a later delete, and go with the undo of the relate that made it)
        undid = [by_id[line["entry"]].body[HOST_MEMBER] for line in lines if line["status"] == "reversed"]
        put_back = [r for m in undid for r in only_in(m["snapshot"], m["afterState"])["relations"]]
        took = [r for m in undid for r in only_in(m["afterState"], m["snapshot"])["relations"]]
        now = read_graph(self.memory)["relations"]
        for line in lines:
            if not _cascade_conflict(line, by_id[line["entry"]]):
                continue
            self._count("cascade conflicts")
            cascades.append(line)
            for change in line["receipt"]["changes"]:
                relation = change["expected"]
                there = relation in last_graph["relations"] or relation in put_back
                assert there, f"a cascade conflict naming what was not there: {line}"
                assert relation in now or relation in took, f"a cascade conflict that removed: {line}"
        if not self.edited:  # the only conflicts without a colleague: a cascade, and the earlier
            # steps on the same graph that its step, staying, keeps from being undone as planned
            latest = max((line["step"] for line in cascades), default=0)
            others = [line for line in lines if line["status"] == "conflicted" and line not in cascades]
            assert all(line["step"] < latest for line in others), f"a conflict without a colleague: {lines}"
        self.colleague &= after  # what an override removed is no longer hers to keep

    @invariant()
    def the_server_file_stays_readable(self) -> None:
        read_graph(self.memory)


def _cascade_conflict(line: dict[str, Any], entry: Any) -> bool:
    """Whether ``line`` is the documented cascade conflict (docs/policy.md, "An inverse that removes
    more than it names"): the undo of a create whose delete_entities would also delete relations
    naming an entity it created, relations the call did not make, each named by its path."""
    receipt = line.get("receipt") or {}
    if line["status"] != "conflicted" or DID_NOT_MAKE not in str(receipt.get("message", "")):
        return False
    member = entry.body[HOST_MEMBER]
    created = {e["name"] for e in only_in(member["afterState"], member["snapshot"])["entities"]}
    made = only_in(member["afterState"], member["snapshot"])["relations"]
    named = receipt.get("changes") or []
    for change in named:
        relation = change["expected"]
        assert change["field"].startswith("/relations/"), f"a cascade onto what is no relation: {line}"
        assert {relation["from"], relation["to"]} & created, f"a cascade onto what it did not create: {line}"
        assert relation not in made, f"a cascade conflict over the call's own relation: {line}"
    assert named, f"a cascade conflict naming nothing: {line}"
    assert entry.body["tool"] == "create_entities", f"a cascade conflict of another tool: {line}"
    return True


def _every_conflict(plan: dict[str, Any]) -> tuple[str, ...]:
    return tuple(c["entry"] for c in plan["conflicts"])


def _undoable(entry: Any) -> bool:
    member = entry.body.get(HOST_MEMBER)
    return isinstance(member, dict) and "after" in member


def _says_it_overwrote(lines: list[dict[str, Any]]) -> bool:
    """A reversed step whose answer names what the override overwrote (a colleague's observation on
    an entity the agent created goes with the entity the undo deletes)."""
    return any(
        "the override overwrote" in str((line.get("receipt") or {}).get("message", ""))
        for line in lines
        if line["status"] == "reversed"
    )


def _removed_only_by_failed(status: dict[str, str]) -> bool:
    """Several steps ran: one removed the colleague's change (reported failed), others reversed."""
    return "failed" in status.values()


def configure(org: Any, memory: Path, portal: Any) -> Callable[[], None]:
    """Point the machine at ``org``, start its Recorder session (one for every example: the server
    processes start once) and return a function that ends it and clears the machine again."""
    session = portal.wrap_async_context_manager(org.shared())
    GraphMachine.world = {"org": org, "memory": memory, "portal": portal, "shared": session.__enter__()}

    def clear() -> None:
        GraphMachine.world.clear()
        session.__exit__(None, None, None)

    return clear
