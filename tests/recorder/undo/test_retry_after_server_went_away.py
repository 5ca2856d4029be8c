"""A step whose tool server went away mid-undo is retried by a resume, under the same approval.

The chain server really goes away (it is killed with SIGKILL at a known point, see
``chain_server.py``): before anything commits (``gone`` keys), or after the compensation committed
but before it answered (``lost`` keys). The Recorder records the step as failed with nothing heard
back; ``hatp-recorder undo`` sends the very same request again, which the server answers from its own
record. Only an answer from the server is final: a conflict or a failure it reports is not retried.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.chain_server import gone_mark, outside_edit, undo_log, values
from support.undo_authority import NO_LONGER, approved_not_run, edit_directory, halts, without_lees_role
from support.undo_org import Org, make_org

from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo import Step, UndoCode, UndoError

pytestmark = pytest.mark.slow


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Org:
    """The chain server over stdio, a process of its own: these tests kill it mid-compensation."""
    return make_org(tmp_path, capfd, stdio=True)


@pytest.fixture
def staying_org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Org:
    """The chain server in this process over streamable HTTP, for tests whose server stays up and
    answers (a conflict, a failure with a code): nothing here needs a process to kill."""
    return make_org(tmp_path, capfd)


def three_puts(middle: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("chain_put", {"key": "a", "value": "1"}),
        ("chain_put", {"key": middle, "value": "1"}),
        ("chain_put", {"key": "c", "value": "1"}),
    ]


def of_kind(org: Org, run: str, kind: str) -> list[Entry]:
    return [e for e in org.entries(run) if e.kind == kind]


def outcomes_of(org: Org, run: str, step: str) -> list[Entry]:
    return [e for e in of_kind(org, run, "undo-outcome") if e.body["step"] == step]


def retried(org: Org, run: str) -> dict[str, bool]:
    """Each step of the latest Reversal Record: whether it waits for a retry."""
    [*_, reversal] = of_kind(org, run, "reversal")
    return {line["entry"]: bool(line.get("retry")) for line in reversal.body["steps"]}


def compensated_twice(org: Org) -> list[str]:
    return [token for token, n in Counter(undo_log(org.db())).items() if n > 1]


def test_a_step_whose_server_went_away_is_retried_under_the_same_approval_reversed_once_and_never_again(
    org: Org,
) -> None:
    run = org.agent(three_puts("gone-b"))
    ref, _ = org.plan(run, "--from", "1")

    first, out, err = org.approve(ref)  # the chain server is killed while it compensates e2

    assert first == 1, out + err
    assert gone_mark(org.db(), "gone-b").exists()
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "failed"}
    assert retried(org, run) == {"e3": False, "e2": True, "e1": True}
    [failed] = outcomes_of(org, run, "e2")
    assert "answer" not in failed.body
    assert failed.body["attempt"] == 1
    assert f"undo {ref}` again" in out
    assert values(org.db()) == {"a": "1", "gone-b": "1"}
    assert len(undo_log(org.db())) == 1

    again, out, err = org.cli("undo", ref)  # the server is started again, and answers

    assert again == 0, out + err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert retried(org, run) == {"e3": False, "e2": False, "e1": False}
    assert values(org.db()) == {}
    assert len(undo_log(org.db())) == 3
    assert compensated_twice(org) == []
    [intent] = [e for e in of_kind(org, run, "undo-intent") if e.body["step"] == "e2"]
    attempts = outcomes_of(org, run, "e2")
    assert [(o.body["intent"], o.body["attempt"]) for o in attempts] == [(intent.id, 1), (intent.id, 2)]
    assert attempts[1].body["answer"]["status"] == "done"
    assert len(of_kind(org, run, "undo-intent")) == 3  # one per step: a retry re-sends, it never re-asks
    assert len(of_kind(org, run, "reversal")) == 2
    assert len(of_kind(org, run, "decision")) == 1  # the same approval
    assert org.verify(run).problems == []
    size = len(org.entries(run))

    # The same story goes on (one retried undo, no second setup): the finished undo run again
    # returns its record and sends nothing.
    finished, out, err = org.cli("undo", ref)

    assert finished == 0, out + err
    assert len(org.entries(run)) == size
    assert len(undo_log(org.db())) == 3


def test_a_compensation_that_committed_but_whose_answer_was_lost_is_retried_and_gets_the_stored_answer(
    org: Org,
) -> None:
    run = org.agent(three_puts("lost-b"))
    ref, _ = org.plan(run, "--from", "1")

    first, out, err = org.approve(ref)  # e2 commits on the server, which is killed before it answers

    assert first == 1, out + err
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "failed"}
    assert values(org.db()) == {"a": "1"}  # e2's undo did happen
    assert len(undo_log(org.db())) == 2

    again, out, err = org.cli("undo", ref)

    assert again == 0, out + err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert values(org.db()) == {}
    assert len(undo_log(org.db())) == 3  # e2 once: the retry got the answer stored at its commit
    assert compensated_twice(org) == []
    first_try, retry = outcomes_of(org, run, "e2")
    assert "answer" not in first_try.body
    assert retry.body["answer"]["status"] == "done"
    assert retry.body["answer"]["at"] < retry.time  # answered from the record, not made anew
    assert org.verify(run).problems == []


def test_a_conflict_the_server_answered_is_final_and_a_resume_sends_nothing_again(staying_org: Org) -> None:
    org = staying_org
    run = org.agent(three_puts("b"))
    ref = approved_not_run(org, run)

    def eve_edits_a_after_e3(step: Step) -> None:
        if step.id == "e3":
            outside_edit(org.db(), "a", "eve's", by="eve")  # while the undo runs

    org.run_plan(ref, eve_edits_a_after_e3)
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "conflicted"}
    assert retried(org, run) == {"e3": False, "e2": False, "e1": False}
    size = len(org.entries(run))

    code, out, err = org.cli("undo", ref)

    assert code == 1, out + err
    assert len(org.entries(run)) == size  # nothing sent, nothing recorded
    assert [o.body["answer"]["status"] for o in outcomes_of(org, run, "e1")] == ["conflict"]
    assert values(org.db()) == {"a": "eve's"}
    assert len(undo_log(org.db())) == 2


def test_a_failure_the_server_reported_with_a_code_is_final_and_not_retried(staying_org: Org) -> None:
    org = staying_org
    run = org.agent(three_puts("fail-b"))
    ref, _ = org.plan(run, "--from", "1")
    first, _, _ = org.approve(ref)
    size = len(org.entries(run))

    again, out, err = org.cli("undo", ref)

    assert (first, again) == (1, 1), out + err
    assert len(org.entries(run)) == size
    [outcome] = outcomes_of(org, run, "e2")
    assert outcome.body["answer"]["code"] == "UNDO_FAILED"
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "reversed"}
    assert retried(org, run) == {"e3": False, "e2": False, "e1": False}


def test_a_retry_rechecks_authority_and_halts_before_resending_when_the_approver_lost_it(org: Org) -> None:
    run = org.agent(three_puts("gone-b"))
    ref, _ = org.plan(run, "--from", "1")
    org.approve(ref)
    edit_directory(org, without_lees_role)

    code, _, err = org.cli("undo", ref)

    assert code == 2
    assert err.startswith(NO_LONGER), err
    [halt] = halts(org, run)
    assert (halt.body["check"], halt.body["before"]) == ("role", None)  # checked as the resume starts
    assert len(outcomes_of(org, run, "e2")) == 1  # not sent again
    assert values(org.db()) == {"a": "1", "gone-b": "1"}
    assert org.verify(run).problems == []


def test_authority_is_rechecked_before_each_retry_and_lost_midway_halts_before_the_next(org: Org) -> None:
    run = org.agent(three_puts("gone-b"))
    ref, _ = org.plan(run, "--from", "1")
    org.approve(ref)  # e2 and e1 got no answer
    sent: list[str] = []

    def lee_steps_down(step: Step) -> None:
        sent.append(step.id)
        edit_directory(org, without_lees_role)  # while the resume runs

    with pytest.raises(UndoError) as stopped:
        org.run_plan(ref, lee_steps_down)

    assert stopped.value.code == UndoCode.APPROVER_NO_LONGER_AUTHORIZED
    assert sent == ["e2"]
    [halt] = halts(org, run)
    assert (halt.body["check"], halt.body["before"]) == ("role", "e1")
    assert [o.body["attempt"] for o in outcomes_of(org, run, "e1")] == [1]
    assert values(org.db()) == {"a": "1"}
