"""A call that writes two resources, undone through the Recorder: both are checked and put back; a
colleague's edit of either is the conflict named, and nothing of theirs is overwritten; the run's own
later (or earlier) write of either one is a dependency undone in order, never a conflict.

The CRM's ``move_amount`` moves part of one deal's amount to another: ``effect.resource`` is the
deal it leaves, ``effect.also`` the deal it goes to, each with its version.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from hatp_journal.recorder import testing
from hatp_journal.recorder.testing import Org
from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.crm import build, edit_deal, read_deal
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.store import create_store_engine

pytestmark = pytest.mark.slow

MOVE = ("crm_move_amount", {"from_deal": "D-881", "to_deal": "D-882", "amount": "500.00"})


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Iterator[Org]:
    """The organisation with the CRM served from this process over streamable HTTP."""
    with ExitStack() as stack:
        mcp, journal = build(tmp_path / "crm.db", SigningKey.load_or_create(tmp_path / "crm.key"))
        stack.callback(journal.engine.dispose)
        url = stack.enter_context(serving(mcp.http_app(), scheduler=True))
        yield testing.make_org(tmp_path, {"crm": f"{url}/mcp"}, capture=capfd)


def deals(org: Org) -> dict[str, tuple[str, str]]:
    """Each deal's (amount, stage) as the CRM stores it now."""
    engine = create_store_engine(org.db("crm"))
    try:
        return {d: (read_deal(engine, d).amount, read_deal(engine, d).stage) for d in ("D-881", "D-882")}
    finally:
        engine.dispose()


def eve_edits(org: Org, deal: str) -> None:
    engine = create_store_engine(org.db("crm"))
    try:
        edit_deal(engine, deal, stage="Lost", by="eve@acme.com")
    finally:
        engine.dispose()


def entries(plan: dict[str, Any], section: str) -> list[str]:
    return [item["entry"] for item in plan.get(section, [])]


def test_undoing_a_two_deal_move_puts_both_amounts_back(org: Org) -> None:
    before = deals(org)
    run = org.agent([MOVE])
    assert deals(org)["D-882"][0] == "13000.00"

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert (entries(plan, "steps"), plan["conflicts"]) == (["e1"], [])
    assert plan["steps"][0]["undo"] == "Deal amounts D-881: 47500.00 → 48000.00; D-882: 13000.00 → 12500.00"
    assert code == 0, err
    assert org.reversal(run) == {"e1": "reversed"}
    assert deals(org) == before
    assert org.verify(run).ok


@pytest.mark.parametrize("edited", ["D-881", "D-882"])
def test_a_colleagues_edit_of_either_deal_is_the_conflict_named_and_nothing_is_overwritten(
    org: Org, edited: str
) -> None:
    run = org.agent([MOVE])
    eve_edits(org, edited)
    edited_state = deals(org)

    ref, plan = org.plan(run, "--from", "1")
    code, _, _ = org.approve(ref)

    [conflict] = plan["conflicts"]
    assert conflict["entry"] == "e1"
    version = "v14" if edited == "D-881" else "v6"
    said = f"crm://acme/deal/{edited}: stage is now Lost ({version}), changed by eve@acme.com"
    assert conflict["message"] == said
    assert conflict["changedBy"] == "eve@acme.com"
    found = {r["resource"]: r["status"] for r in conflict["resources"]}
    assert found == {
        "crm://acme/deal/D-881": "conflict" if edited == "D-881" else "ok",
        "crm://acme/deal/D-882": "conflict" if edited == "D-882" else "ok",
    }
    assert code == 1
    assert deals(org) == edited_state  # neither amount put back over Eve's edit
    assert org.verify(run).ok


def test_an_approved_override_puts_both_amounts_back_over_the_edit_it_was_shown(org: Org) -> None:
    run = org.agent([MOVE])
    eve_edits(org, "D-882")

    ref, _ = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref, "--override", "e1")

    assert code == 0, err
    assert org.reversal(run) == {"e1": "reversed"}
    assert deals(org) == {"D-881": ("48000.00", "Proposal"), "D-882": ("12500.00", "Lost")}


def test_the_runs_own_later_edit_of_the_second_deal_is_a_dependency_undone_first(org: Org) -> None:
    before = deals(org)
    run = org.agent([MOVE, ("crm_update_deal", {"deal_id": "D-882", "stage": "Won"})])

    ref, plan = org.plan(run, "--step", "1")
    code, _, err = org.approve(ref)

    assert plan["conflicts"] == []
    assert [(s["entry"], s.get("after")) for s in plan["steps"]] == [("e2", None), ("e1", "e2")]
    assert code == 0, err
    assert org.reversal(run) == {"e2": "reversed", "e1": "reversed"}
    assert deals(org) == before


def test_the_runs_own_earlier_edit_of_the_second_deal_is_no_conflict_changed_by_the_agent(org: Org) -> None:
    before = deals(org)
    run = org.agent([("crm_update_deal", {"deal_id": "D-882", "stage": "Won"}), MOVE])

    ref, plan = org.plan(run, "--from", "1")
    code, _, err = org.approve(ref)

    assert plan["conflicts"] == []
    assert [(s["entry"], s.get("after")) for s in plan["steps"]] == [("e2", None), ("e1", "e2")]
    assert code == 0, err
    assert deals(org) == before
