"""The approver's Resume retries, under the same approval, the steps whose tool server went away.

Over plain HTTP (no chromium). The chain server is killed while it compensates a ``gone`` key (see
``chain_server.py``); the Reversal Record says which steps got no answer and offers Resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from http_browser import code, form_fields, signed_in
from support.chain_server import undo_log, values
from support.undo_org import DANA, make_org
from test_undo_in_background import approve, outcome_once
from web_org import Approver, approver_for


@pytest.fixture
def approver(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Approver]:
    """The chain server over stdio, a process of its own: these tests kill it mid-compensation."""
    with approver_for(make_org(tmp_path, capfd, stdio=True)) as served:
        yield served


def test_resume_on_the_outcome_page_retries_the_steps_whose_server_went_away_and_finishes_the_undo(
    approver: Approver,
) -> None:
    run = approver.org.agent(
        [("chain_put", {"key": "a", "value": "1"}), ("chain_put", {"key": "gone-b", "value": "1"})]
    )
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)

    approve(browser, ref)
    first = outcome_once(browser, ref, 'id="reversal"')
    assert 'id="retry"' in first, first
    assert approver.org.reversal(run) == {"e2": "failed", "e1": "failed"}

    status, html = browser.post(f"/plans/{ref}/resume", form_fields(first))
    done = outcome_once(browser, ref, 'data-entry="e1" data-status="reversed"')

    assert status == 200, html
    assert 'id="retry"' not in done, done
    assert approver.org.reversal(run) == {"e2": "reversed", "e1": "reversed"}
    assert values(approver.org.db()) == {}
    assert len(undo_log(approver.org.db())) == 2  # each once


def test_a_finished_undo_after_a_retry_is_not_resumable(approver: Approver) -> None:
    run = approver.org.agent([("chain_put", {"key": "gone-a", "value": "1"})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)
    approve(browser, ref)
    first = outcome_once(browser, ref, 'id="reversal"')
    browser.post(f"/plans/{ref}/resume", form_fields(first))
    done = outcome_once(browser, ref, 'data-entry="e1" data-status="reversed"')

    status, html = browser.post(f"/plans/{ref}/resume", form_fields(browser.get(f"/plans/{ref}")[1]))

    assert 'id="retry"' not in done, done
    assert (status, code(html)) == (409, "NOT_RESUMABLE")
    assert len(undo_log(approver.org.db())) == 1
