"""An approved undo runs beside the pages: the approve form answers at once, the outcome page follows it.

Over plain HTTP (no chromium). The undo that stops early is a real one: another live process holds
the run's undo lease, exactly as when an undo of the same run is running elsewhere.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_browser import Browser, code, decisions, form_fields, signed_in
from sqlmodel import Session, SQLModel
from support.chain_server import outside_edit, values
from support.undo_org import DANA, make_org
from support.waiting import wait_until
from web_org import Approver, approver_for

from hatp_journal.recorder.undo.lease import RecUndoLease


@pytest.fixture
def approver(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Approver]:
    """The chain server in this process over streamable HTTP."""
    with approver_for(make_org(tmp_path, capfd)) as served:
        yield served


@pytest.fixture
def stdio_approver(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Approver]:
    """The chain server over stdio, a process of its own: the test holds back its start (GATED)."""
    with approver_for(make_org(tmp_path, capfd, stdio=True)) as served:
        yield served


@pytest.fixture
def planned(approver: Approver) -> tuple[str, str]:
    return two_puts_planned(approver)


def two_puts_planned(approver: Approver) -> tuple[str, str]:
    """(run, plan ref): two puts of one key, and a plan to undo both waiting for the team lead."""
    run = approver.org.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": "2"})]
    )
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    return run, ref


# A tool server that waits for the test to open ``gate`` (a FIFO) before it starts: argv is the gate,
# then the server's own command line.
GATED = "import os, sys; open(sys.argv[1]).read(); os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"


def hold_the_undo_lease(approver: Approver, run: str, pid: int) -> None:
    """Record that process ``pid`` on this host is running an undo of ``run``."""
    engine = approver.org.store().engine
    try:
        SQLModel.metadata.create_all(engine, tables=[SQLModel.metadata.tables["rec_undo_lease"]])
        with Session(engine) as session:
            session.add(RecUndoLease(run=run, plan="elsewhere", host=socket.gethostname(), pid=pid))
            session.commit()
    finally:
        engine.dispose()


def approve(browser: Browser, ref: str) -> str:
    """Press approve on the plan's page; the page the browser lands on."""
    fields = {**form_fields(browser.get(f"/plans/{ref}")[1]), "decision": "approve"}
    status, html = browser.post(f"/plans/{ref}", fields)
    assert status == 200, html
    return html


def outcome_once(browser: Browser, ref: str, showing: str) -> str:
    """Reload the outcome page (as its refresh does) until it shows ``showing``; that page."""

    def page() -> str | None:
        html = browser.get(f"/plans/{ref}/outcome")[1]
        return html if showing in html else None

    return wait_until(page, f"the outcome page to show {showing!r}", every=0.2)


def test_an_approved_undo_runs_in_the_background_and_the_outcome_page_shows_its_record(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)

    landed = approve(browser, ref)
    html = outcome_once(browser, ref, 'id="reversal"')

    assert 'id="undoing"' in landed or 'id="reversal"' in landed
    assert 'id="reversal"' in html, html
    assert values(approver.org.db()) == {}
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}


def test_approve_answers_before_any_tool_server_is_asked_and_the_check_then_counts_it_and_runs_the_undo(
    stdio_approver: Approver, tmp_path: Path
) -> None:
    approver = stdio_approver
    run, ref = two_puts_planned(approver)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    chain = approver.web.config.servers["chain"]
    chain.args = ["-c", GATED, str(gate), *chain.args]
    browser = signed_in(approver)

    landed = approve(browser, ref)
    recorded_before_the_servers_answered = decisions(approver, run)
    with gate.open("w") as opened:  # lets the chain server start
        opened.write("go")
    done = outcome_once(browser, ref, 'id="reversal"')

    assert 'data-state="checking"' in landed, landed
    assert recorded_before_the_servers_answered == []
    assert 'id="reversal"' in done, done
    assert decisions(approver, run) == [True]
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}


def test_an_approval_of_a_plan_that_changed_since_it_was_shown_is_checked_in_the_background_and_not_counted(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    outside_edit(approver.org.db(), "a", "3", by="eve")

    approve(browser, ref)
    told = outcome_once(browser, ref, 'data-code="NOT_COUNTED"')

    assert code(told) == "NOT_COUNTED"
    assert "the plan changed since it was shown" in told
    assert decisions(approver, run) == [False]
    assert values(approver.org.db()) == {"a": "3"}


def test_an_undo_held_by_another_live_process_stops_with_undo_busy_and_resumes_once_it_is_gone(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    holder = subprocess.Popen(["sleep", "120"])
    try:
        hold_the_undo_lease(approver, run, holder.pid)
        browser = signed_in(approver)

        approve(browser, ref)
        stopped = outcome_once(browser, ref, 'data-state="stopped"')
        assert 'data-state="stopped"' in stopped, stopped
        assert "UNDO_BUSY" in stopped
        assert values(approver.org.db()) == {"a": "2"}
        assert "reversal" not in [e.kind for e in approver.org.entries(run)]

        holder.kill()
        holder.wait()
        status, html = browser.post(f"/plans/{ref}/resume", form_fields(stopped))
        done = outcome_once(browser, ref, 'id="reversal"')
    finally:
        holder.kill()

    assert status == 200, html
    assert 'id="reversal"' in done, done
    assert values(approver.org.db()) == {}
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}


def test_a_plan_with_nothing_left_to_run_is_not_resumable(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    plan_page = browser.get(f"/plans/{ref}")[1]

    waiting = browser.post(f"/plans/{ref}/resume", form_fields(plan_page))
    approve(browser, ref)
    outcome_once(browser, ref, 'id="reversal"')
    finished = browser.post(f"/plans/{ref}/resume", form_fields(browser.get(f"/plans/{ref}")[1]))

    assert (waiting[0], code(waiting[1])) == (409, "NOT_RESUMABLE")
    assert (finished[0], code(finished[1])) == (409, "NOT_RESUMABLE")
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}
