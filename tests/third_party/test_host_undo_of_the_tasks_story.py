"""Seed 004's story, with our guarantees: an agent adds two tasks, completes one and deletes the
other on a server that knows nothing of undo; a person edits the completed task; the undo, run by
the host from the registry's compensation, reports the edited task as a conflict and undoes the rest."""

from __future__ import annotations

import json
import sqlite3
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from host_undo_org import HostOrg, statuses
from tasks_server import tasks_server

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.changes.host_undo import HOST_MEMBER, host_compensate
from hatp_journal.recorder.changes.plan import ReversalPlan, plan_text
from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.cli.show import entry_line
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.record import Entry, verify_record
from hatp_journal.recorder.undo.planner import UndoRequest
from hatp_journal.recorder.web.views import review
from hatp_journal.toolkit.signing import verify_answer

REGISTRY = Path(__file__).with_name("tasks_registry.json")


def tasks_of(db: Path) -> dict[int, tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        return {row[0]: (row[1], row[2]) for row in connection.execute("SELECT id, title, status FROM task")}


def make_org(root: Path, registry: Path = REGISTRY) -> tuple[HostOrg, Path]:
    db = root / "tasks.db"
    policy = {"registry": {"files": [str(registry)], "servers": {"tasks": "seed-004-tasks"}}}
    servers = {"tasks": ServerConfig(command="in-memory")}
    return HostOrg.make(root, servers, policy, embedded={"tasks": tasks_server(db)}), db


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The story, once for the module: the run, the plan, the Reversal Record, the tasks before and after."""
    org, db = make_org(tmp_path_factory.mktemp("tasks"))

    async def told() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            a = (
                await agent.call_tool_mcp("tasks_add_task", {"title": "Write the README"})
            ).structured_content
            b = (await agent.call_tool_mcp("tasks_add_task", {"title": "Ship the demo"})).structured_content
            await agent.call_tool_mcp("tasks_complete_task", {"id": a["id"]})
            await agent.call_tool_mcp("tasks_delete_task", {"id": b["id"]})
            recorder.close()
        with sqlite3.connect(db) as connection:  # a colleague renames the completed task by hand
            connection.execute("UPDATE task SET title = 'Write the README (Sam)' WHERE id = ?", (a["id"],))
        before = tasks_of(db)
        run = recorder.run_id
        assert run is not None
        async with AsyncExitStack() as stack:
            plan, reversal = await org.undo(org.undo_servers(stack), run, UndoRequest(from_step=1))
        return {
            "run": run,
            "org": org,
            "plan": plan,
            "reversal": reversal,
            "before": before,
            "after": tasks_of(db),
        }

    return anyio.run(told)


def test_every_call_of_the_unaware_server_is_journaled_with_the_hosts_signed_compensation(
    story: dict[str, Any],
) -> None:
    org: HostOrg = story["org"]
    calls = [e for e in org.store.entries(story["run"]) if e.kind == "call"]

    assert [c.body["tool"] for c in calls] == ["add_task", "add_task", "complete_task", "delete_task"]
    assert all(c.body["intake"]["status"] == "absent" for c in calls)  # the server said nothing
    members = [c.body[HOST_MEMBER] for c in calls]
    assert [m["resource"] for m in members] == ["task:1", "task:2", "task:1", "task:2"]
    assert members[3]["snapshot"] == {"task": {"id": 2, "title": "Ship the demo", "status": "open"}}
    assert members[3]["inverse"] == {
        "tool": "restore_task",
        "arguments": {"id": 2, "title": "Ship the demo", "status": "open"},
    }
    assert all(m["receipt"]["kid"] == org.store.key.kid for m in members)


def test_the_plan_says_the_host_undoes_it_and_names_the_edited_task_as_a_conflict(
    story: dict[str, Any],
) -> None:
    plan = story["plan"]
    text = plan_text(ReversalPlan.model_validate(plan), agent="ops-bot", principal="Dana")

    assert [s["entry"] for s in plan["steps"]] == ["e4", "e2"]
    assert {s["undoneBy"] for s in plan["steps"]} == {"host"}
    assert [c["entry"] for c in plan["conflicts"]] == ["e3", "e1"]
    assert [change["field"] for change in plan["conflicts"][0]["changes"]] == ["/task/title"]
    assert plan["conflicts"][0]["changes"][0]["now"] == "Write the README (Sam)"
    assert "undone by the host, not the server" in text
    # The add's conflict is the run's own completion (a dependency) and the colleague's rename, told apart.
    assert plan["conflicts"][1]["message"] == (
        "this run's step 3 (e3) changed it later (/task/status): a dependency, undone first; "
        "then changed outside the run: /task/title is now Write the README (Sam)"
    )  # paths as RFC 6901 JSON Pointers, like every conflict's
    assert [change["field"] for change in plan["conflicts"][1]["changes"]] == ["/task/title"]


def test_the_undo_restores_the_deleted_task_removes_the_added_one_and_leaves_the_edited_one(
    story: dict[str, Any],
) -> None:
    assert statuses(story["reversal"]) == {
        "e4": "reversed",
        "e3": "conflicted",
        "e2": "reversed",
        "e1": "conflicted",
    }
    assert story["before"] == {1: ("Write the README (Sam)", "completed")}
    assert story["after"] == {
        1: ("Write the README (Sam)", "completed")
    }  # task 2: restored, then its add undone


def test_the_hosts_undo_answers_are_signed_by_the_recorder_and_say_who_undid_it(
    story: dict[str, Any],
) -> None:
    org: HostOrg = story["org"]
    reversal: Entry = story["reversal"]
    receipts = [line["receipt"] for line in reversal.body["steps"] if line["status"] == "reversed"]
    keys = {org.store.key.kid: org.store.public_key}

    assert len(receipts) == 2
    assert all(verify_answer(receipt, keys) for receipt in receipts)
    assert all(receipt["evidence"] == ["undone by the host, not the server"] for receipt in receipts)
    assert [r["versionLeft"] == r["versionExpected"] for r in receipts] == [False, False]


def undone_with(tmp_path: Path, change: Any, tool: str) -> tuple[dict[str, Any], Path]:
    """Add a task, then call ``tool`` on it, and undo that call, under the registry as ``change``
    leaves it: the step's line of the Reversal Record, and the task file."""
    registry = json.loads(REGISTRY.read_text())
    change(registry["tools"])
    (tmp_path / "tasks_registry.json").write_text(json.dumps(registry))
    org, db = make_org(tmp_path, tmp_path / "tasks_registry.json")

    async def told() -> Entry | None:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            a = (await agent.call_tool_mcp("tasks_add_task", {"title": "Keep me"})).structured_content
            await agent.call_tool_mcp(f"tasks_{tool}", {"id": a["id"]})
            recorder.close()
        assert recorder.run_id is not None
        async with AsyncExitStack() as stack:
            _, reversal = await org.undo(org.undo_servers(stack), recorder.run_id, UndoRequest(steps=(2,)))
        return reversal

    reversal = anyio.run(told)
    assert reversal is not None
    [line] = reversal.body["steps"]
    return line, db


def test_an_inverse_the_server_rejects_fails_the_step_with_its_words_and_changes_nothing(
    tmp_path: Path,
) -> None:
    def bad_status(tools: dict[str, Any]) -> None:  # renders to a status restore_task refuses
        tools["delete_task"]["compensation"]["inverse"]["arguments"]["status"] = "{snapshot.task.title}"

    line, db = undone_with(tmp_path, bad_status, "delete_task")

    assert line["status"] == "failed"
    assert line["receipt"]["code"] == "UNDO_FAILED"
    assert "status must be one of" in line["receipt"]["message"]  # the server's own words, passed on
    assert tasks_of(db) == {}


def test_an_inverse_that_does_not_restore_the_state_is_unverified(tmp_path: Path) -> None:
    def no_reopen(tools: dict[str, Any]) -> None:  # "undoes" a completion by completing again
        tools["complete_task"]["compensation"]["inverse"]["tool"] = "complete_task"

    line, db = undone_with(tmp_path, no_reopen, "complete_task")

    assert line["status"] == "failed"
    assert line["receipt"]["code"] == "UNDO_UNVERIFIED"
    assert tasks_of(db) == {1: ("Keep me", "completed")}


def test_show_and_the_run_review_give_each_call_its_class_and_say_who_undoes_it(tmp_path: Path) -> None:
    org, _ = make_org(tmp_path)

    async def told() -> str:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            await agent.call_tool_mcp("tasks_add_task", {"title": "Write the README"})
            await agent.call_tool_mcp("tasks_list_tasks", {})
            recorder.close()
        assert recorder.run_id is not None
        return recorder.run_id

    entries = org.store.entries(anyio.run(told))
    shown = [entry_line(entry).split("\t") for entry in entries]
    windows, others = review(entries, utc_now())

    assert [line[3] for line in shown] == ["allow R1", "allow R0"]
    assert shown[0][4] == "Add task Write the README (undone by the host, not the server)"
    assert [(w.rclass, w.by_host) for w in windows] == [("R1", True)]
    assert [(o.rclass, o.by_host) for o in others] == [("R0", False)]


def test_the_run_record_of_the_story_verifies_offline_with_the_hosts_receipts(story: dict[str, Any]) -> None:
    org: HostOrg = story["org"]
    record = org.store.export(story["run"]).to_bytes()

    report = verify_record(record, recorder_keys={org.store.key.kid: org.store.public_key})

    assert report.ok, report.problems
    assert report.receipts_checked >= 4 + 4 + 2  # the calls' compensations, the checks, the undo answers


def test_a_change_made_while_the_undo_runs_is_an_undo_conflict_and_is_not_overwritten(tmp_path: Path) -> None:
    org, db = make_org(tmp_path)
    server = org.embedded["tasks"]

    async def told() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            a = (await agent.call_tool_mcp("tasks_add_task", {"title": "Keep me"})).structured_content
            await agent.call_tool_mcp("tasks_complete_task", {"id": a["id"]})
            recorder.close()
        assert recorder.run_id is not None
        [_, completed] = steps_of(org.store.entries(recorder.run_id))
        with sqlite3.connect(db) as connection:  # after the plan was approved, before its step runs
            connection.execute("UPDATE task SET title = 'Keep me (Sam)'")
        async with Client(server) as client:
            request = {"ifVersion": completed.version}
            return await host_compensate(completed, request, client.call_tool_mcp, org.store.key, utc_now)

    answer = anyio.run(told)

    assert (answer["status"], answer["code"]) == ("conflict", "UNDO_CONFLICT")
    assert [change["field"] for change in answer["changes"]] == ["/task/title"]
    assert tasks_of(db) == {1: ("Keep me (Sam)", "completed")}
