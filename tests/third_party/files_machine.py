"""A Hypothesis state machine over the real filesystem server behind the Recorder, undone by the host
(the shipped registry: ``write_file`` snapshots the file with ``read_text_file`` and writes the old
content back; a person lowered it to R1 so the agent's writes go through): the agent's writes (to
files that exist, some writing what is already there, so changing nothing), writes of new files
(no snapshot can be taken: they ask and never run), reads, a colleague's edits made directly in the
folder, and undo plans approved and run, with and without overrides. One Recorder session, one
server and one set of undo connections for all examples (a BlockingPortal keeps them in one event
loop); each example starts from the same two files, in a run of its own.

Invariants, checked after every undo:
- no colleague's content is removed unless a signed override named the step that overwrote it;
- a call that changed nothing is never planned nor run;
- an undo that left what it said it would is reported ``reversed``, never failed; a failure names
  the paths that differ; a conflict comes only from a colleague's edit;
- reads never block: a read is never planned, never a conflict, never what keeps a step;
- a write the host could not snapshot never ran (its file does not exist).
Used by tests/third_party/test_host_undo_state_machine.py (few examples) and
bench/host_undo_machine.py (many).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hatp_journal.recorder.changes.host_diff import same, undone
from hatp_journal.recorder.changes.host_undo import HOST_MEMBER, changed_nothing
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.undo.planner import UndoRequest

FILES = ("a.txt", "b.txt")
TEXTS = ("x\n", "y\n")
FILESYSTEM_REGISTRY = "@modelcontextprotocol/server-filesystem"
LEE = "human://acme.com/lee"  # holds the undo authority in host_undo_org's directory


def files_servers(command: Path, folder: Path) -> dict[str, ServerConfig]:
    return {"fs": ServerConfig(command=str(command), args=[str(folder)])}


def files_policy() -> dict[str, Any]:
    """The shipped registry for the server, and a person's decision that its writes are R1 (the
    host keeps the old content of every file it overwrites and can write it back)."""
    lowered = {
        "server": "fs",
        "tool": "write_file",
        "class": "R1",
        "by": LEE,
        "reason": "The host snapshots every file before it is overwritten and can write it back.",
    }
    return {"registry": {"servers": {"fs": FILESYSTEM_REGISTRY}}, "classOverrides": [lowered]}


def contents(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(folder.iterdir()) if path.is_file()}


class FilesMachine(RuleBasedStateMachine):
    """Set ``world`` (a HostOrg, the server's folder and a BlockingPortal) before running."""

    world: ClassVar[dict[str, Any]] = {}
    stats: ClassVar[dict[str, int]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.org, self.folder, self.portal = self.world["org"], self.world["folder"], self.world["portal"]
        for path in self.folder.iterdir():
            path.unlink()
        for name in FILES:
            (self.folder / name).write_text(f"{name} as the colleague left it\n")
        self.colleague: dict[str, str] = contents(self.folder)  # what is hers, still there
        self.edited = False  # a colleague edited a file since the run began
        shared = self.world["shared"]
        shared.next_run()  # a run of its own, on the server processes every example shares
        self.recorder, self.agent, self.servers = shared.recorder, shared.agent, shared.servers
        self.steps = 0
        self.noops: set[str] = set()  # the calls an undo of this run found had changed nothing
        self._count("examples started")
        self.new_files = 0

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        answer = self.portal.call(self.agent.call_tool_mcp, f"fs_{tool}", arguments)
        self.steps += 1
        self._count("agent calls")
        now = contents(self.folder)
        # What the agent overwrote of hers is no longer hers.
        self.colleague = {name: text for name, text in self.colleague.items() if now.get(name) == text}
        return answer

    def teardown(self) -> None:
        self.stats["no-op calls seen by an undo"] = self.stats.get("no-op calls seen by an undo", 0) + len(
            self.noops
        )

    def _count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    # -- the agent ----------------------------------------------------------------------------

    @rule(name=st.sampled_from(FILES), text=st.sampled_from(TEXTS))
    def write(self, name: str, text: str) -> None:
        if (self.folder / name).read_text() == text:
            self._count("writes of what was there")
        answer = self._call("write_file", {"path": str(self.folder / name), "content": text})
        assert not answer.is_error, answer.content

    @precondition(lambda self: self.new_files == 0)  # once per example: it only ever asks
    @rule(text=st.sampled_from(TEXTS))
    def write_a_new_file(self, text: str) -> None:
        self.new_files += 1
        path = self.folder / f"new-{self.new_files}.txt"
        answer = self.portal.call(
            self.agent.call_tool_mcp, "fs_write_file", {"path": str(path), "content": text}
        )
        self._count("writes that asked (no snapshot)")
        assert (answer.structured_content or {}).get("status") == "pending_approval", answer.content
        assert not path.exists(), "a write the host could not snapshot ran"

    @rule(name=st.sampled_from(FILES), tool=st.sampled_from(["read_text_file", "get_file_info"]))
    def read(self, name: str, tool: str) -> None:
        self._call(tool, {"path": str(self.folder / name)})

    # -- a colleague, directly in the folder ------------------------------------------------------

    @rule(name=st.sampled_from(FILES), text=st.sampled_from(("c1\n", "c2\n")))
    def colleague_edits(self, name: str, text: str) -> None:
        path = self.folder / name
        if path.read_text() == text:
            return
        path.write_text(text)
        self.colleague[name] = text
        self.edited = True
        self._count("colleague edits")

    # -- undo ---------------------------------------------------------------------------------

    @precondition(lambda self: self.steps > 0)
    @rule(data=st.data(), override=st.booleans())
    def undo(self, data: st.DataObject, override: bool) -> None:
        run = self.recorder.run_id
        step = data.draw(st.integers(1, self.steps), label="from step")
        calls = [e for e in self.org.store.entries(run) if e.kind == "call"]
        before = contents(self.folder)
        present = {name for name, text in self.colleague.items() if before.get(name) == text}

        async def plan_and_run(overrides: Any) -> Any:
            return await self.org.undo(self.servers, run, UndoRequest(from_step=step), overrides)

        plan, reversal = self.portal.call(plan_and_run, ())
        named: tuple[str, ...] = ()
        for section in (
            "steps",
            "conflicts",
            "notReversible",
            "blocked",
            "alreadyReversed",
            "changedNothing",
        ):
            self.stats[f"planned as {section}"] = self.stats.get(f"planned as {section}", 0) + len(
                plan.get(section, [])
            )
        if override and plan["conflicts"]:
            self._count("overrides")
            # The steps without a conflict ran: override the conflicts of the plan approved now.
            plan, reversal = self.portal.call(plan_and_run, _every_conflict)
            named = _every_conflict(plan)
        after = contents(self.folder)
        lines = reversal.body["steps"] if reversal is not None else []
        status = {line["entry"]: line["status"] for line in lines}
        self._count("undos")
        self._count("reversed steps" if "reversed" in status.values() else "undos reversing nothing")

        noops = {e.id for e in calls if _undoable(e) and changed_nothing(e.body[HOST_MEMBER])}
        self.noops |= noops
        reads = {e.id for e in calls if e.body.get("tool") != "write_file"}
        planned = {s["entry"] for s in plan["steps"]} | {c["entry"] for c in plan["conflicts"]}
        assert not planned & noops, f"a call that changed nothing was planned: {planned & noops}"
        assert not set(status) & noops, "a call that changed nothing was run"
        assert {c["entry"] for c in plan.get("changedNothing", [])} <= noops, "shown as changing nothing"
        assert not planned & reads, "a read was planned"
        keepers = {e for b in plan["blocked"] for e in b["keptFor"]}
        assert not keepers & reads, "a read kept a step"

        removed = {name for name in present if after.get(name) != before[name]}
        if removed:
            self._count("colleague changes removed under override")
            overwritten = {_path_of(e) for e in calls if e.id in named and status.get(e.id) == "reversed"}
            assert {str(self.folder / name) for name in removed} <= overwritten, (
                f"a colleague's file was changed without an override naming it: {removed} {lines}"
            )
        for line in lines:  # a failure names what differs: never a bare "failed"
            if line["status"] == "failed":
                self._count("steps reported failed")
                assert "/" in str(line.get("reason")), f"a failure that names nothing: {line}"
        ran = [line for line in lines if line["status"] in ("reversed", "failed")]
        if len(ran) == 1 and not named:  # one inverse ran: did it leave what it said?
            entry = next(e for e in calls if e.id == ran[0]["entry"])
            member = entry.body[HOST_MEMBER]
            name = Path(_path_of(entry)).name
            wanted = undone({"content": before[name]}, member["snapshot"], member["afterState"])
            if same(wanted, {"content": after[name]}):
                assert ran[0]["status"] == "reversed", (
                    f"an undo that did what it said was reported failed: {ran}"
                )
        if not self.edited:
            assert "conflicted" not in status.values(), f"a conflict without a colleague: {lines}"
        self.colleague = {name: text for name, text in self.colleague.items() if after.get(name) == text}

    @invariant()
    def only_the_files_the_agent_and_colleague_wrote_exist(self) -> None:
        assert set(contents(self.folder)) == set(FILES)


def _every_conflict(plan: dict[str, Any]) -> tuple[str, ...]:
    return tuple(c["entry"] for c in plan["conflicts"])


def _undoable(entry: Any) -> bool:
    member = entry.body.get(HOST_MEMBER)
    return isinstance(member, dict) and "after" in member


def _path_of(entry: Any) -> str:
    return str(entry.body.get("arguments", {}).get("path"))


def configure(org: Any, folder: Path, portal: Any) -> Callable[[], None]:
    """Point the machine at ``org``, start its Recorder session (one for every example: the server
    processes start once) and return a function that ends it and clears the machine again."""
    session = portal.wrap_async_context_manager(org.shared())
    FilesMachine.world = {"org": org, "folder": folder, "portal": portal, "shared": session.__enter__()}

    def clear() -> None:
        FilesMachine.world.clear()
        session.__exit__(None, None, None)

    return clear
