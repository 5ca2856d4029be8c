"""Executing a plan: one undo at a time, unreachable servers, denials and remedies."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from support.chain_server import outside_edit, values
from support.undo_org import CHAIN, DANA, LEAD, LEE, Org, make_org

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.undo import ReversalPlan, decide_plan, execute_plan, find_plan
from hatp_journal.recorder.undo.actions import authority_now
from hatp_journal.recorder.undo.errors import UndoCode, UndoError
from hatp_journal.recorder.undo.lease import undo_lease
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit import SigningKey


def test_a_second_concurrent_undo_of_the_same_run_is_refused_and_compensates_nothing(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")
    code, _, err = org.cli("deny", ref, "--as", LEE, "--key", org.key(LEE))
    assert code == 0, err
    ref, _ = org.plan(run, "--from", "1")
    store = org.store()
    try:
        with undo_lease(store.engine, run, "e-elsewhere"):
            code, _, err = org.approve(ref)
    finally:
        store.dispose()

    assert code == 2
    assert "UNDO_BUSY" in err
    assert values(org.db()) == {"a": "1"}


def test_an_undo_through_a_recorder_on_postgresql_compensates_and_one_undo_at_a_time_holds(
    postgres_url: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org = make_org(tmp_path, capfd, store=postgres_url)
    run = org.agent([("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "b", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")

    code, _, err = org.approve(ref)

    assert code == 0, err
    assert values(org.db()) == {}
    assert org.reversal(run) == {"e2": "reversed", "e1": "reversed"}
    assert org.verify(run).ok
    store = org.store()
    try:
        with (
            undo_lease(store.engine, run, "e-first"),
            pytest.raises(UndoError) as busy,
            undo_lease(store.engine, run, "e-second"),
        ):
            pass
    finally:
        store.dispose()
    assert busy.value.code == UndoCode.UNDO_BUSY


def test_a_denied_plan_is_never_run(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")

    org.cli("deny", ref, "--as", LEE, "--key", org.key(LEE))
    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert "PLAN_DENIED" in err
    assert values(org.db()) == {"a": "1"}


def test_a_second_approval_of_a_plan_is_recorded_but_not_counted(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")
    assert org.approve(ref)[0] == 0

    code, _, err = org.approve(ref)

    assert code == 2
    assert err.startswith("hatp-recorder: ALREADY_DECIDED: not counted: this plan was already approved")
    decisions = [e.body["counted"] for e in org.entries(run) if e.kind == "decision"]
    assert decisions == [True, False]


def test_an_unreachable_server_fails_its_steps_keeps_what_they_relied_on_and_the_rest_is_undone(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    org = make_org(tmp_path, capfd)
    second = ["--db", str(tmp_path / "second.db"), "--key", str(tmp_path / "second.key")]
    with org.config.open("a") as config:
        config.write(f"\n[servers.second]\ncommand = {json.dumps(sys.executable)}\n")
        config.write(f"args = {json.dumps([str(CHAIN), *second])}\n")
    run = org.agent(
        [
            ("chain_put", {"key": "a", "value": "1"}),
            ("second_put", {"key": "x", "value": "1"}),
            ("chain_put", {"key": "b", "value": "1"}),
            ("second_attach", {"key": "y", "target": "a"}),
        ]
    )
    ref, plan = org.plan(run, "--from", "1")
    assert [s["entry"] for s in plan["steps"]] == ["e4", "e3", "e2", "e1"]
    store = org.store()
    ask = find_plan(store, ref)

    directory = Directory.load(tmp_path / "directory.json")
    decided = decide_plan(
        store,
        ref,
        "approve",
        person=LEE,
        key=SigningKey.from_file(Path(org.key(LEE))),
        directory=directory,
        undo_authority="human://acme.com/role/team-lead",
        fresh=ask.plan,
        now=utc_now(),
    )
    assert decided.counted, decided.message
    broken = load_config(org.config)
    broken.servers["second"].command = str(tmp_path / "no-such-server")

    async def execute() -> None:
        async with AsyncExitStack() as stack:
            servers = UndoServers(broken, store, stack)

            async def replan() -> ReversalPlan:
                return ask.plan

            await execute_plan(
                store, ref, compensate=servers.compensate, replan=replan, authority=authority_now(broken)
            )

    try:
        anyio.run(execute)
    finally:
        store.dispose()

    statuses = org.reversal(run)
    assert statuses == {"e4": "failed", "e3": "reversed", "e2": "failed", "e1": "skipped"}
    [reversal] = [e for e in org.entries(run) if e.kind == "reversal"]
    reasons = {s["entry"]: s.get("reason", "") for s in reversal.body["steps"]}
    assert "second could not be reached" in reasons["e4"]
    assert reasons["e1"] == "relied on by e4"
    assert values(org.db()) == {"a": "1"}


def test_a_remedy_is_its_own_approved_action_chained_into_the_same_record(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "wrong"}), ("chain_publish", {"key": "a"})])
    fix = json.dumps({"key": "notice", "value": "the published value was wrong"})

    code, out, err = org.cli("remedy", f"{run}/e2", "--call", "chain.put", "--arguments", fix, "--by", DANA)
    assert code == 0, err
    ask = out.split()[2]
    assert values(org.db()) == {"a": "wrong"}  # suggested and asked, never performed by itself
    code, out, err = org.approve(ask)

    assert code == 0, err
    [remedy] = [e for e in org.entries(run) if e.kind == "call" and e.body.get("remedies")]
    assert remedy.body["remedies"] == "e2"
    assert remedy.body["intake"]["status"] == "verified"
    assert values(org.db()) == {"a": "wrong", "notice": "the published value was wrong"}


def test_a_remedy_for_a_step_that_can_be_undone_is_refused(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])

    code, _, err = org.cli("remedy", f"{run}/e1", "--call", "chain.put", "--by", DANA)

    assert code == 2
    assert "NOT_A_REMEDY" in err


def test_a_plan_that_changed_between_approval_and_execution_is_not_run(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")
    store = org.store()
    try:
        directory = Directory.load(org.root / "directory.json")
        lee = SigningKey.from_file(Path(org.key(LEE)))
        shown = find_plan(store, ref).plan
        decided = decide_plan(
            store,
            ref,
            "approve",
            person=LEE,
            key=lee,
            directory=directory,
            undo_authority=LEAD,
            fresh=shown,
            now=utc_now(),
        )
    finally:
        store.dispose()
    assert decided.counted
    outside_edit(org.db(), "a", "2", by="eve")

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert "PLAN_STALE" in err
    assert values(org.db()) == {"a": "2"}


def test_authority_is_checked_against_the_directory_as_it_is_when_the_approver_decides(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")
    people = json.loads((org.root / "directory.json").read_text())
    for person in people["people"]:
        person["roles"] = []  # Lee left the team-lead role after the plan was made
    (org.root / "directory.json").write_text(json.dumps(people))

    code, _, err = org.approve(ref)

    assert code == 2
    assert err.startswith(f"hatp-recorder: NOT_PERMITTED: not counted: {LEE} does not hold {LEAD}")
    assert values(org.db()) == {"a": "1"}


def test_pending_plans_are_listed_with_the_asks(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")

    code, out, _ = org.cli("asks")

    assert code == 0
    assert f"{ref}  undo from 1  1 to undo, 0 conflicts, 0 cannot be undone" in out


def test_running_a_plan_that_does_not_exist_is_refused(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])

    code, _, err = org.cli("undo", f"{run}/e9")

    assert code == 2
    assert err.startswith("hatp-recorder: UNKNOWN_PLAN: ")
    assert values(org.db()) == {"a": "1"}


def test_running_an_entry_that_is_a_call_not_a_plan_is_refused_and_compensates_nothing(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])

    code, _, err = org.cli("undo", f"{run}/e1")

    assert code == 2
    assert err.startswith("hatp-recorder: UNKNOWN_PLAN: ")
    assert "is a call entry, not a plan" in err
    assert values(org.db()) == {"a": "1"}
    assert [e.kind for e in org.entries(run)] == ["call"]


def test_a_plan_nobody_has_approved_yet_is_not_run(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = org.plan(run, "--from", "1")

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith("hatp-recorder: PLAN_NOT_APPROVED: ")
    assert values(org.db()) == {"a": "1"}
    assert not [e for e in org.entries(run) if e.kind in ("undo-intent", "reversal")]


def test_a_remedy_for_an_entry_that_does_not_exist_is_refused_and_nothing_is_asked(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "1"})])

    code, _, err = org.cli("remedy", f"{run}/e7", "--call", "chain.put", "--by", DANA)

    assert code == 2
    assert err.startswith("hatp-recorder: UNKNOWN_ENTRY: ")
    assert [e.kind for e in org.entries(run)] == ["call"]


def test_a_remedy_asked_for_by_someone_outside_the_directory_is_refused(org: Org) -> None:
    run = org.agent([("chain_put", {"key": "a", "value": "wrong"}), ("chain_publish", {"key": "a"})])

    code, _, err = org.cli("remedy", f"{run}/e2", "--call", "chain.put", "--by", "human://acme.com/nobody")

    assert code == 2
    assert err.startswith("hatp-recorder: NOT_PERMITTED: ")
    assert [e.kind for e in org.entries(run)] == ["call", "call"]
