"""A run's own writes to one resource (create → edit → remove) are one chain: planned and undone
newest first, each undo leaving the version the one before it expects, with no conflict of the
run's own making. A write by someone else between the run's steps still conflicts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.chain_server import binned, outside_edit, undo_log, values
from support.undo_org import CHAIN, Org, make_org


def put(key: str, value: str) -> tuple[str, dict[str, Any]]:
    return ("chain_put", {"key": key, "value": value})


def remove(key: str) -> tuple[str, dict[str, Any]]:
    return ("chain_remove", {"key": key})


def entries_in(plan: dict[str, Any], section: str) -> list[str]:
    return [item["entry"] for item in plan.get(section, [])]


def test_create_edit_remove_undone_from_step_1_reverses_each_step_and_leaves_the_key_gone(org: Org) -> None:
    run = org.agent([put("memo", "draft"), put("memo", "final"), remove("memo")])
    assert binned(org.db()) == {"memo": "final"}  # the run's own remove: in the bin, not shown

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert plan["conflicts"] == []
    assert [(s["entry"], s.get("after")) for s in plan["steps"]] == [("e3", None), ("e2", "e3"), ("e1", "e2")]
    assert code == 0, err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert (values(org.db()), binned(org.db())) == ({}, {})  # it did not exist before the run
    assert len(undo_log(org.db())) == 3
    assert org.verify(run).ok


def test_undoing_only_the_create_pulls_in_the_runs_later_writes_of_the_same_key(org: Org) -> None:
    run = org.agent([put("memo", "draft"), put("other", "1"), put("memo", "final"), remove("memo")])

    _, plan = org.plan(run, "--step", "1")

    assert entries_in(plan, "steps") == ["e4", "e3", "e1"]
    assert plan["conflicts"] == []


def test_an_outside_edit_between_the_runs_steps_conflicts_and_the_later_steps_are_still_undone(
    org: Org,
) -> None:
    def eve_edits(after_call: int) -> None:
        if after_call == 1:
            outside_edit(org.db(), "memo", "eve's draft", by="eve")

    run = org.agent([put("memo", "draft"), put("memo", "final"), remove("memo")], between=eve_edits)

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert entries_in(plan, "conflicts") == ["e1"]
    assert entries_in(plan, "steps") == ["e3", "e2"]
    assert code == 1, err  # the undo ran, and a step stayed
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "conflicted"}
    assert values(org.db()) == {"memo": "eve's draft"}  # Eve's write stays; the run's are undone


def test_an_outside_edit_after_the_runs_edit_keeps_the_edit_and_the_create_and_undoes_only_the_remove(
    org: Org,
) -> None:
    def eve_edits(after_call: int) -> None:
        if after_call == 2:
            outside_edit(org.db(), "memo", "eve's final", by="eve")

    run = org.agent([put("memo", "draft"), put("memo", "final"), remove("memo")], between=eve_edits)

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert entries_in(plan, "steps") == ["e3"]
    assert entries_in(plan, "conflicts") == ["e2", "e1"]
    assert code == 1, err
    assert org.reversal(run) == {"e3": "reversed", "e2": "conflicted", "e1": "conflicted"}
    assert values(org.db()) == {"memo": "eve's final"}


def test_a_server_that_cannot_be_reached_while_planning_leaves_its_steps_unresolved_and_others_checked(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org = make_org(tmp_path, capfd)
    second = ["--db", str(tmp_path / "second.db"), "--key", str(tmp_path / "second.key")]
    config = org.config.read_text()
    org.config.write_text(
        config + f"\n[servers.second]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(CHAIN), *second])}\n"
    )
    run = org.agent(
        [
            put("a", "1"),
            ("second_put", {"key": "x", "value": "1"}),
            ("second_put", {"key": "y", "value": "1"}),
        ]
    )
    org.config.write_text(
        config + f'\n[servers.second]\ncommand = "{tmp_path / "no-such-server"}"\n'
    )  # the second server is gone by the time someone plans

    _, plan = org.plan(run, "--from", "1")

    assert entries_in(plan, "unresolved") == ["e3", "e2"]
    assert entries_in(plan, "steps") == ["e1"]
    assert all("second could not be reached" in item["reason"] for item in plan["unresolved"])


def test_a_conflict_names_the_runs_own_later_write_as_a_dependency_and_the_colleague_for_what_they_changed(
    org: Org,
) -> None:
    def eve_edits(after_call: int) -> None:
        if after_call == 2:  # after the run's last write of the memo
            outside_edit(org.db(), "memo", "eve's final", by="eve")

    run = org.agent([put("memo", "draft"), put("memo", "final")], between=eve_edits)

    _, plan = org.plan(run, "--from", "1")

    latest, first = plan["conflicts"]
    assert (latest["entry"], first["entry"]) == ("e2", "e1")
    assert latest["changedBy"] == "eve"
    own = "this run's step 2 (e2) changed it later: a dependency, undone first; "
    assert first["message"].startswith(own)
    assert first["message"].endswith("then changed by eve: value is now eve's final")
    assert [(c["field"], c["now"]) for c in first["changes"]] == [("value", "eve's final")]
