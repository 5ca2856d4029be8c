"""Planning an undo: dependencies pulled in, links by source, readSince, and refused requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.chain_server import outside_edit, values
from support.undo_org import DANA, EVE, LEE, Org, make_org


def put(key: str, value: str) -> tuple[str, dict[str, Any]]:
    return ("chain_put", {"key": key, "value": value})


def attach(key: str, target: str) -> tuple[str, dict[str, Any]]:
    return ("chain_attach", {"key": key, "target": target})


def entries_in(plan: dict[str, Any], section: str) -> list[str]:
    return [item["entry"] for item in plan.get(section, [])]


def test_a_step_that_used_step_2_is_pulled_into_an_undo_of_step_2(org: Org) -> None:
    run = org.agent([put("a", "1"), put("b", "1"), put("c", "1"), put("d", "1"), attach("e", "b")])

    _, plan = org.plan(run, "--step", "2")

    assert entries_in(plan, "steps") == ["e5", "e2"]


def test_an_undo_from_step_1_lists_every_step_newest_first_and_runs_in_that_order(org: Org) -> None:
    run = org.agent([put("a", "1"), put("a", "2"), put("b", "1")])

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert entries_in(plan, "steps") == ["e3", "e2", "e1"]
    assert code == 0, err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert values(org.db()) == {}
    _, shown, _ = org.cli("show", run)
    kinds = [line.split()[1] for line in shown.splitlines()]
    assert kinds == ["call"] * 3 + ["plan", "decision"] + ["undo-intent", "undo-outcome"] * 3 + ["reversal"]
    assert re.search(r"of plan e4 +done +3 reversed", shown)


def unfiled_plan(org: Org, run: str, *which: str) -> dict[str, Any]:
    """A plan with nothing to undo: shown to who asked (as JSON), refused NOTHING_TO_UNDO, never filed."""
    code, out, err = org.cli("plan", run, *which, "--by", DANA, "--json")
    assert code == 2, (out, err)
    assert err.startswith("hatp-recorder: NOTHING_TO_UNDO: ")
    assert not [e for e in org.entries(run) if e.kind == "plan"]
    told = json.loads(out)
    assert told["ref"] is None
    plan: dict[str, Any] = told["plan"]
    return plan


def test_a_tool_that_crashed_is_unresolved_in_the_plan_and_one_that_refused_is_left_out(org: Org) -> None:
    told: list[Any] = []
    run = org.agent(
        [put("a", "1"), ("chain_put_and_crash", {"key": "b", "value": "1"}), ("chain_refuse", {"key": "c"})],
        told=told,
    )

    plan = unfiled_plan(org, run, "--from", "1")

    crashed, refused = told[1].structured_content, told[2].structured_content
    assert (crashed["code"], refused["code"]) == ("TOOL_CRASHED", "TOOL_FAILED")
    assert "RuntimeError: the tool has a bug" in crashed["message"]
    assert entries_in(plan, "unresolved") == ["e2"]
    [unresolved] = plan["unresolved"]
    assert unresolved["reason"].startswith("the tool failed, whether it changed anything is unknown: ")
    assert "TOOL_CRASHED: put_and_crash raised RuntimeError" in unresolved["reason"]
    assert entries_in(plan, "blocked") == ["e1"]  # the crashed call may have relied on it
    listed = [entries_in(plan, section) for section in ("steps", "conflicts", "notReversible", "expired")]
    assert listed == [[], [], [], []]  # the refused call changed nothing: nowhere in the plan
    assert values(org.db()) == {"a": "1"}  # the crash's own store write rolled back
    report = org.verify(run)
    assert report.ok, report.problems


def test_a_failed_step_leaves_what_it_relied_on_untouched(org: Org) -> None:
    run = org.agent([put("a", "kept"), attach("fail-link", "a"), put("z", "1")])

    ref, _ = org.plan(run, "--from", "1")
    code, out, _ = org.approve(ref)

    assert code == 1
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "skipped"}
    assert values(org.db()) == {"a": "kept", "fail-link": "-> a"}
    assert "relied on by e2" in out


def test_readsince_lists_another_runs_read_of_the_resource_made_after_the_change(org: Org) -> None:
    run = org.agent([put("D-881", "Won")])
    other = org.agent([("chain_get", {"key": "D-881"})], agent="ops-bot")

    _, plan = org.plan(run, "--from", "1")

    [read] = plan["readSince"]
    assert (read["run"], read["entry"], read["agent"], read["resource"]) == (
        other,
        "e1",
        "ops-bot",
        "chain://store/D-881",
    )
    assert "ops-bot, sales-bot" in plan["unrecordedMemory"]


def test_an_inferred_link_is_shown_but_only_a_confirmed_one_pulls_a_step_in(org: Org) -> None:
    run = org.agent([put("alpha", "1"), put("beta", "alpha")])
    [e2] = [e for e in org.entries(run) if e.id == "e2"]
    assert {"on": "e1", "source": "inferred", "via": "alpha"} in e2.body["links"]

    first, before = org.plan(run, "--step", "1")
    org.cli("deny", first, "--as", LEE, "--key", org.key(LEE))  # a pending plan for step 1 bars another
    code, _, err = org.cli("confirm-link", run, "e2", "e1", "--as", LEE, "--key", org.key(LEE))
    _, after = org.plan(run, "--step", "1")

    assert entries_in(before, "steps") == ["e1"]
    assert code == 0, err
    assert entries_in(after, "steps") == ["e2", "e1"]


def test_a_call_to_an_unaware_server_depends_on_everything_before_it_and_keeps_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org = make_org(tmp_path, capfd, plain=True)
    run = org.agent([put("a", "1"), ("plain_shout", {"text": "hi"})])

    plan = unfiled_plan(org, run, "--step", "1")

    assert entries_in(plan, "notReversible") == ["e2"]
    assert entries_in(plan, "blocked") == ["e1"]
    assert plan["blocked"][0]["keptFor"] == ["e2"]


def test_undo_of_a_run_that_does_not_exist_is_refused(org: Org) -> None:
    code, _, err = org.cli("plan", "run_nope", "--from", "1", "--by", DANA)

    assert code == 2
    assert "UNKNOWN_RUN" in err


def test_a_step_out_of_range_is_refused_naming_the_range(org: Org) -> None:
    run = org.agent([put("a", "1")])

    code, _, err = org.cli("plan", run, "--from", "4", "--by", DANA)

    assert code == 2
    assert "STEP_OUT_OF_RANGE: step 4 is out of range: the run has 1 step" in err


def test_someone_who_is_neither_principal_nor_approver_cannot_ask_for_an_undo(org: Org) -> None:
    run = org.agent([put("a", "1")])

    code, _, err = org.cli("plan", run, "--from", "1", "--by", EVE)

    assert code == 2
    assert "NOT_PERMITTED" in err


def test_an_approval_by_someone_without_the_role_is_not_counted_and_nothing_is_undone(org: Org) -> None:
    run = org.agent([put("a", "1")])
    ref, _ = org.plan(run, "--from", "1")

    code, out, err = org.approve(ref, person=EVE)

    assert code == 2
    assert err.startswith("hatp-recorder: NOT_PERMITTED: not counted: ")
    assert out == ""
    assert values(org.db()) == {"a": "1"}
    assert not [e for e in org.entries(run) if e.kind in ("undo-intent", "reversal")]


def test_an_approval_of_a_plan_that_changed_since_it_was_shown_is_not_counted(org: Org) -> None:
    run = org.agent([put("a", "1")])
    ref, _ = org.plan(run, "--from", "1")
    outside_edit(org.db(), "a", "2", by="eve")
    code, _, err = org.approve(ref)

    assert code == 2
    assert err.startswith("hatp-recorder: PLAN_STALE: not counted: the plan changed since it was shown")
    assert values(org.db()) == {"a": "2"}


def test_an_override_must_name_a_conflict_of_the_plan(org: Org) -> None:
    run = org.agent([put("a", "1")])
    ref, _ = org.plan(run, "--from", "1")

    code, _, err = org.approve(ref, "--override", "e1")

    assert code == 2
    assert "BAD_OVERRIDE" in err
    assert values(org.db()) == {"a": "1"}


def test_a_policy_that_names_no_undo_authority_refuses_every_undo_and_records_no_plan(org: Org) -> None:
    run = org.agent([put("a", "1")])
    policy = json.loads((org.root / "policy.json").read_text())
    del policy["undoAuthority"]
    (org.root / "policy.json").write_text(json.dumps(policy))

    code, _, err = org.cli("plan", run, "--from", "1", "--by", DANA)

    assert code == 2
    assert err.startswith("hatp-recorder: NO_UNDO_AUTHORITY: ")
    assert [e.kind for e in org.entries(run)] == ["call"]


def test_confirming_a_link_that_was_never_inferred_is_refused_and_records_nothing(org: Org) -> None:
    run = org.agent([put("alpha", "1"), put("beta", "1")])

    code, _, err = org.cli("confirm-link", run, "e2", "e1", "--as", LEE, "--key", org.key(LEE))

    assert code == 2
    assert err.startswith("hatp-recorder: UNKNOWN_ENTRY: ")
    assert [e.kind for e in org.entries(run)] == ["call", "call"]


def test_confirming_a_link_in_a_run_that_does_not_exist_is_refused(org: Org) -> None:
    code, _, err = org.cli("confirm-link", "run_nope", "e2", "e1", "--as", LEE, "--key", org.key(LEE))

    assert code == 2
    assert err.startswith("hatp-recorder: UNKNOWN_RUN: ")


def test_a_link_confirmed_by_someone_without_the_undo_role_is_refused_and_not_relied_on(org: Org) -> None:
    run = org.agent([put("alpha", "1"), put("beta", "alpha")])

    code, _, err = org.cli("confirm-link", run, "e2", "e1", "--as", EVE, "--key", org.key(EVE))
    _, plan = org.plan(run, "--step", "1")

    assert code == 2
    assert err.startswith("hatp-recorder: NOT_PERMITTED: ")
    assert not [e for e in org.entries(run) if e.kind == "link"]
    assert entries_in(plan, "steps") == ["e1"]
