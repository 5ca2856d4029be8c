"""The real filesystem and SQLite servers behind the Recorder, once for the module: reads go through
by class, a SQL statement that is not one SELECT asks, an overwrite is snapshotted and undone by the
host, and a colleague's later edit of a file makes its undo a conflict unless a signed override says so."""

from __future__ import annotations

import sqlite3
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest
from host_undo_org import LEE, HostOrg, statuses
from third_party_servers import NODE_BIN, SQLITE_VENV, require

from hatp_journal.recorder.changes.host_undo import HOST_MEMBER
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo.planner import UndoRequest

FILESYSTEM = "@modelcontextprotocol/server-filesystem"
WRITES_KEPT = {
    "server": "files",
    "tool": "write_file",
    "class": "R1",
    "by": LEE,  # a person holding the undo authority: lowering a class is a person's decision
    "reason": "The host keeps the old content of every overwritten file and can put it back.",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("host-undo")
    files = root / "files"
    files.mkdir()
    (files / "notes.txt").write_text("v1\n")
    (files / "plan.txt").write_text("p1\n")
    with sqlite3.connect(root / "shop.db") as connection:
        connection.execute("CREATE TABLE item (name TEXT)")
        connection.execute("INSERT INTO item VALUES ('lamp')")
    servers = {
        "files": ServerConfig(command=str(require(NODE_BIN / "mcp-server-filesystem")), args=[str(files)]),
        "db": ServerConfig(
            command=str(require(SQLITE_VENV / "bin" / "mcp-server-sqlite")),
            args=["--db-path", str(root / "shop.db")],
        ),
    }
    policy = {
        "registry": {"servers": {"files": FILESYSTEM, "db": "mcp-server-sqlite"}},
        "classOverrides": [WRITES_KEPT],
    }
    org = HostOrg.make(root, servers, policy)
    told: dict[str, Any] = {"org": org, "files": files, "db": root / "shop.db"}

    async def story() -> None:
        async with AsyncExitStack() as stack:
            recorder, agent = await org.session(stack)
            call = agent.call_tool_mcp
            told["read"] = await call("files_read_text_file", {"path": str(files / "notes.txt")})
            told["select"] = await call("db_read_query", {"query": "SELECT name FROM item"})
            told["delete"] = await call("db_write_query", {"query": "DELETE FROM item"})
            await call("files_write_file", {"path": str(files / "notes.txt"), "content": "v2\n"})
            await call("files_write_file", {"path": str(files / "plan.txt"), "content": "p2\n"})
            told["new"] = await call("files_write_file", {"path": str(files / "new.txt"), "content": "n\n"})
            recorder.close()
        (files / "plan.txt").write_text("p2, and the colleague's line\n")
        run = told["run"] = recorder.run_id
        assert run is not None
        writes = [e.id for e in org.store.entries(run) if e.kind == "call" and e.body["tool"] == "write_file"]
        told["notes"], told["plan"] = writes
        async with AsyncExitStack() as stack:
            servers = org.undo_servers(stack)
            told["first"] = await org.undo(servers, run, UndoRequest(from_step=3))
            told["after_first"] = (files / "plan.txt").read_text(), (files / "notes.txt").read_text()
            told["second"] = await org.undo(servers, run, UndoRequest(steps=(4,)), overrides=(told["plan"],))

    anyio.run(story)
    return told


def decision(world: dict[str, Any], tool: str) -> dict[str, Any]:
    org: HostOrg = world["org"]
    found = [
        e for e in org.store.entries(world["run"]) if e.body.get("tool") == tool and "decision" in e.body
    ]
    return dict(found[0].body["decision"])


def test_reads_of_the_filesystem_and_a_single_select_go_through_by_class(world: dict[str, Any]) -> None:
    assert "v1" in str(world["read"].content)
    assert "lamp" in str(world["select"].content)
    assert decision(world, "read_text_file")["reversibility"]["class"] == "R0"
    select = decision(world, "read_query")
    assert (select["action"], select["reversibility"]["rule"]) == ("allow", "registry-argument-rule")


def test_a_sql_statement_that_is_not_one_select_asks_and_changes_nothing(world: dict[str, Any]) -> None:
    delete = decision(world, "write_query")

    assert world["delete"].structured_content["status"] == "pending_approval"
    assert (delete["action"], delete["reversibility"]["class"]) == ("ask", "R4")
    with sqlite3.connect(world["db"]) as connection:
        assert connection.execute("SELECT name FROM item").fetchall() == [("lamp",)]


def test_an_overwrite_is_journaled_with_the_old_content_signed_by_the_recorder(world: dict[str, Any]) -> None:
    org: HostOrg = world["org"]
    notes = next(e for e in org.store.entries(world["run"]) if e.id == world["notes"])
    member = notes.body[HOST_MEMBER]

    assert member["snapshot"] == {"content": "v1\n"}
    assert member["inverse"]["tool"] == "write_file"
    assert member["inverse"]["arguments"]["content"] == "v1\n"
    assert member["afterState"] == {"content": "v2\n"}
    assert member["receipt"]["kid"] == org.store.key.kid


def test_a_write_whose_snapshot_fails_asks_instead_of_running_unprotected(world: dict[str, Any]) -> None:
    org: HostOrg = world["org"]
    asks = [e for e in org.store.entries(world["run"]) if e.kind == "ask" and e.body["tool"] == "write_file"]
    [ask] = asks

    assert world["new"].structured_content["status"] == "pending_approval"
    assert [r["code"] for r in ask.body["decision"]["reasons"]][-1] == "SNAPSHOT_FAILED"
    assert not (world["files"] / "new.txt").exists()


def test_the_host_undoes_an_overwrite_and_a_colleagues_later_edit_is_a_conflict_left_untouched(
    world: dict[str, Any],
) -> None:
    plan, reversal = world["first"]
    [conflict] = plan["conflicts"]

    assert statuses(reversal) == {world["plan"]: "conflicted", world["notes"]: "reversed"}
    [kept] = [line for line in reversal.body["steps"] if line["status"] == "conflicted"]
    assert kept["receipt"]["code"] == "UNDO_CONFLICT"  # the host's signed check answer, kept as evidence
    assert [s["undoneBy"] for s in plan["steps"]] == ["host"]
    assert conflict["entry"] == world["plan"]
    assert [(c["field"], c["expected"]) for c in conflict["changes"]] == [("/content", "p2\n")]
    assert world["after_first"] == ("p2, and the colleague's line\n", "v1\n")


def test_a_signed_override_lets_the_host_undo_over_the_colleagues_edit(world: dict[str, Any]) -> None:
    _, reversal = world["second"]
    reversal_entry: Entry = reversal
    [line] = reversal_entry.body["steps"]

    assert line["status"] == "reversed"
    assert line["receipt"]["override"]["by"] == "human://acme.com/lee"
    assert (world["files"] / "plan.txt").read_text() == "p1\n"
