"""The web approver's background undo checks the approver's authority again when it runs or resumes.

Over plain HTTP (no chromium). The first run stops early because another live process holds the
run's undo lease (as in test_undo_in_background); the approver then leaves the directory, and Resume
halts the undo: nothing is compensated and the Outcome page says why.
"""

from __future__ import annotations

import subprocess

from http_browser import code, form_fields, signed_in
from support.chain_server import undo_log, values
from support.undo_authority import HALTED, approved_not_run, edit_directory, halts, without_lee
from support.undo_org import DANA, LEE
from test_undo_in_background import approve, hold_the_undo_lease, outcome_once
from web_org import Approver

from hatp_journal.recorder.undo import UndoCode

TWO_PUTS = [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "a", "value": "2"})]
HALTED_PAGE = f'data-state="halted" data-code="{UndoCode.APPROVER_NO_LONGER_AUTHORIZED}"'


def test_an_undo_resumed_on_the_page_after_the_approver_left_halts_and_the_outcome_page_says_why(
    approver: Approver,
) -> None:
    run = approver.org.agent(TWO_PUTS)
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    holder = subprocess.Popen(["sleep", "120"])
    try:
        hold_the_undo_lease(approver, run, holder.pid)
        browser = signed_in(approver)
        approve(browser, ref)
        stopped = outcome_once(browser, ref, 'data-state="stopped"')
        assert 'data-state="stopped"' in stopped, stopped
        edit_directory(approver.org, without_lee)  # Lee left after approving
        holder.kill()
        holder.wait()

        status, html = browser.post(f"/plans/{ref}/resume", form_fields(stopped))
        halted = outcome_once(browser, ref, HALTED_PAGE)
    finally:
        holder.kill()

    assert status == 200, html
    assert HALTED_PAGE in halted, halted
    assert 'id="resume"' not in halted  # resuming can't help: a new plan must be approved
    [halt] = halts(approver.org, run)
    assert (halt.body["by"], halt.body["check"]) == (LEE, "listed")
    assert not [e for e in approver.org.entries(run) if e.kind in ("undo-intent", "reversal")]
    assert values(approver.org.db()) == {"a": "2"}
    assert undo_log(approver.org.db()) == []

    again = browser.post(f"/plans/{ref}/resume", form_fields(browser.get(f"/plans/{ref}")[1]))

    assert (again[0], code(again[1])) == (409, "NOT_RESUMABLE")
    assert len(halts(approver.org, run)) == 1


def test_the_outcome_page_shows_a_halt_recorded_by_the_command_line(approver: Approver) -> None:
    run = approver.org.agent(TWO_PUTS)
    ref = approved_not_run(approver.org, run)
    edit_directory(approver.org, without_lee)
    told, _, err = approver.org.cli("undo", ref)
    assert told == 2, err

    page = signed_in(approver, DANA).get(f"/plans/{ref}/outcome")[1]

    assert HALTED_PAGE in page, page
    assert [e.kind for e in approver.org.entries(run)][-1] == HALTED
    assert values(approver.org.db()) == {"a": "2"}
