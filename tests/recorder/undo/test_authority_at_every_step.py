"""An approved undo checks its approver's authority again at every run, resume and step.

The approval counted when it was made; before the undo starts (first run or resume) and before each
compensation, the approver must still be in the directory as it is now, hold the policy's
``undoAuthority`` as it is now, and still have the key that signed the approval. If not, nothing more
is compensated, and one ``undo-halted`` entry says why.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from support.chain_server import undo_log, values
from support.undo_authority import (
    NO_LONGER,
    People,
    approved_not_run,
    edit_directory,
    halts,
    with_a_new_key_for_lee,
    without_lee,
    without_lees_role,
)
from support.undo_org import EVE, LEAD, LEE, POLICY, Org, make_org
from support.waiting import wait_until

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.undo import Step, UndoCode, UndoError
from hatp_journal.recorder.undo.actions import authority_now, run_plan
from hatp_journal.recorder.undo.servers import UndoServers

THREE_PUTS = [
    ("chain_put", {"key": "a", "value": "1"}),
    ("chain_put", {"key": "b", "value": "1"}),
    ("chain_put", {"key": "c", "value": "1"}),
]


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Org:
    """The chain server in this process over streamable HTTP: these tests are about who may undo."""
    return make_org(tmp_path, capfd)


@pytest.fixture
def stdio_org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Org:
    """The chain server over stdio, a process of its own for each command: its compensation hangs
    (a ``hang…`` key) while the executor is killed inside it."""
    return make_org(tmp_path, capfd, stdio=True)


def eve_leads_the_team(people: People) -> None:
    next(p for p in people if p["id"] == EVE)["roles"] = [LEAD]


def undo_authority_given_to(org: Org, role: str) -> None:
    (org.root / "policy.json").write_text(json.dumps({**POLICY, "undoAuthority": role}))


def undo_entries(org: Org, run: str) -> list[str]:
    return [e.id for e in org.entries(run) if e.kind in ("undo-intent", "undo-outcome", "reversal")]


@pytest.mark.parametrize(
    ("change", "failed_check"),
    [
        (without_lee, "listed"),
        (without_lees_role, "role"),
        (with_a_new_key_for_lee, "key"),
    ],
)
def test_an_approved_undo_whose_approver_changed_in_the_directory_compensates_nothing_and_says_why(
    org: Org, change: Callable[[People], None], failed_check: str
) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    edit_directory(org, change)

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith(NO_LONGER), err
    [halt] = halts(org, run)
    assert halt.body["plan"] == ref.rsplit("/", 1)[1]
    assert (halt.body["code"], halt.body["by"], halt.body["check"]) == (
        UndoCode.APPROVER_NO_LONGER_AUTHORIZED,
        LEE,
        failed_check,
    )
    assert halt.body["before"] is None  # stopped before the undo started
    assert undo_entries(org, run) == []
    assert values(org.db()) == {"a": "1", "b": "1", "c": "1"}
    assert undo_log(org.db()) == []


def test_an_approved_undo_after_the_policy_gave_undo_authority_to_another_role_compensates_nothing(
    org: Org,
) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    undo_authority_given_to(org, "human://acme.com/role/cfo")

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith(NO_LONGER), err
    [halt] = halts(org, run)
    assert halt.body["check"] == "role"
    assert undo_entries(org, run) == []
    assert values(org.db()) == {"a": "1", "b": "1", "c": "1"}


def test_an_approved_undo_after_the_policy_dropped_undo_authority_compensates_nothing(org: Org) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    (org.root / "policy.json").write_text(json.dumps({"autonomy": POLICY["autonomy"]}))

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith(NO_LONGER), err
    assert [h.body["check"] for h in halts(org, run)] == ["undoAuthority"]
    assert values(org.db()) == {"a": "1", "b": "1", "c": "1"}


def test_a_halted_undo_is_recorded_once_and_stays_halted_when_the_approver_is_listed_again(org: Org) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    directory = (org.root / "directory.json").read_text()
    edit_directory(org, without_lees_role)
    first = org.cli("undo", ref)
    second = org.cli("undo", ref)
    (org.root / "directory.json").write_text(directory)  # Lee is team lead again

    third = org.cli("undo", ref)

    assert [told[0] for told in (first, second, third)] == [2, 2, 2]
    assert all(told[2].startswith(NO_LONGER) for told in (first, second, third))
    assert len(halts(org, run)) == 1
    assert undo_entries(org, run) == []
    assert values(org.db()) == {"a": "1", "b": "1", "c": "1"}


def test_a_directory_that_cannot_be_read_at_resume_stops_the_undo_without_halting_it(org: Org) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    directory = (org.root / "directory.json").read_text()
    (org.root / "directory.json").write_text("{not json")

    code, _, err = org.cli("undo", ref)
    (org.root / "directory.json").write_text(directory)
    again, _, again_err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith("hatp-recorder: error: "), err
    assert halts(org, run) == []
    assert again == 0, again_err  # nothing was decided by a file that could not be read: it runs now
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}


def test_authority_lost_during_an_undo_stops_it_before_the_next_step_and_a_new_approved_plan_goes_on(
    org: Org,
) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    sent: list[str] = []

    def lee_steps_down(step: Step) -> None:
        sent.append(step.id)
        edit_directory(org, without_lees_role)  # while the undo runs

    with pytest.raises(UndoError) as stopped:
        org.run_plan(ref, lee_steps_down)

    assert stopped.value.code == UndoCode.APPROVER_NO_LONGER_AUTHORIZED
    assert sent == ["e3"]
    [halt] = halts(org, run)
    assert (halt.body["check"], halt.body["before"]) == ("role", "e2")
    assert values(org.db()) == {"a": "1", "b": "1"}

    edit_directory(org, eve_leads_the_team)
    again, _ = org.plan(run, "--from", "1")
    _, out, err = org.approve(again, person=EVE)

    assert "hatp-recorder:" not in err, out + err
    assert org.reversal(run) == {"e3": "skipped", "e2": "reversed", "e1": "reversed"}
    assert values(org.db()) == {}
    assert len(undo_log(org.db())) == 3  # e3 once, by the halted plan; nothing twice


def test_run_plan_which_the_cli_and_the_web_runner_share_rechecks_authority(org: Org) -> None:
    run = org.agent(THREE_PUTS)
    ref = approved_not_run(org, run)
    edit_directory(org, without_lee)
    config = load_config(org.config)
    store = org.store()

    async def undo() -> None:
        async with AsyncExitStack() as stack:
            servers = UndoServers(config, store, stack)
            await run_plan(store, ref, servers, utc_now(), authority_now(config))

    try:
        with pytest.raises(UndoError) as stopped:
            anyio.run(undo)
    finally:
        store.dispose()

    assert stopped.value.code == UndoCode.APPROVER_NO_LONGER_AUTHORIZED
    assert [h.body["check"] for h in halts(org, run)] == ["listed"]


# -- a real executor, killed -------------------------------------------------------------------


def spawn(org: Org, *arguments: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "hatp_journal.recorder.cli.command_line",
        "--config",
        str(org.config),
        *arguments,
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_intent(org: Org, run: str, step: str, process: subprocess.Popen[bytes]) -> None:
    """Wait on the record until the undo has sent ``step``'s compensation (while the executor runs)."""
    wait_until(
        lambda: any(e.kind == "undo-intent" and e.body["step"] == step for e in org.entries(run)),
        f"the executor sent {step}",
        alive=lambda: process.poll() is None,
        every=0.05,
    )


@pytest.mark.slow
def test_an_executor_killed_after_approval_and_resumed_after_the_approver_left_runs_nothing_more(
    stdio_org: Org,
) -> None:
    org = stdio_org
    # e2's compensation never answers: the executor is inside it when it is killed.
    run = org.agent(
        [
            ("chain_put", {"key": "a", "value": "1"}),
            ("chain_put", {"key": "hang-b", "value": "1"}),
            ("chain_put", {"key": "c", "value": "1"}),
        ]
    )
    ref, _ = org.plan(run, "--from", "1")
    executor = spawn(org, "approve", ref, "--as", LEE, "--key", org.key(LEE))
    try:
        wait_for_intent(org, run, "e2", executor)
    finally:
        executor.send_signal(signal.SIGKILL)
        executor.wait()
    assert [e.body["counted"] for e in org.entries(run) if e.kind == "decision"] == [True]
    before = undo_entries(org, run)
    edit_directory(org, without_lee)  # Lee left the organisation

    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "hatp_journal.recorder.cli.command_line",
            "--config",
            str(org.config),
            "undo",
            ref,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,  # a regression that re-sends e2 would wait on it: fail instead of hanging
    )

    assert resumed.returncode == 2
    assert resumed.stderr.startswith(NO_LONGER), resumed.stderr
    [halt] = halts(org, run)
    assert (halt.body["by"], halt.body["check"]) == (LEE, "listed")
    assert undo_entries(org, run) == before  # e3's intent and outcome, e2's intent: nothing after
    assert values(org.db()) == {"a": "1", "hang-b": "1"}  # e3 was undone before the kill; e2, e1 not
    assert len(undo_log(org.db())) == 1
    assert org.verify(run).ok
