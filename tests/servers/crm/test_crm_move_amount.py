"""move_amount writes two deals in one call: both are named with their versions, both are checked
before the undo, both put back by it, and a colleague's edit of either one is the conflict named."""

from __future__ import annotations

import pytest
from sqlmodel import Session, col, select

from hatp_journal.servers.crm import edit_deal
from hatp_journal.toolkit._undo_writes import UndoWrite

pytestmark = pytest.mark.anyio

D881, D882 = "crm://acme/deal/D-881", "crm://acme/deal/D-882"


async def test_the_effect_names_both_deals_each_with_its_version_before_and_after(crm) -> None:
    moved = await crm.call("move_amount", from_deal="D-881", to_deal="D-882", amount=" 500.5 ")

    effect = moved.journal["effect"]
    assert (effect["resource"], effect["before"], effect["version"]) == (D881, "v12", "v13")
    assert effect["summary"] == "Deal amounts D-881: 48000.00 → 47499.50; D-882: 12500.00 → 13000.50"
    [other] = effect["also"]
    assert (other["resource"], other["before"], other["version"]) == (D882, "v4", "v5")
    assert other["fields"]["amount"] == "13000.50"
    assert moved.journal["undo"]["kind"] == "compensate"


async def test_the_undo_puts_both_amounts_back_and_names_the_version_it_left_on_each(crm) -> None:
    moved = await crm.call("move_amount", from_deal="D-881", to_deal="D-882", amount="500.00")

    checked = await crm.call("hatp_journal_check", token=moved.journal["compensationToken"])
    assert checked.journal["status"] == "ok"
    assert [r["status"] for r in checked.journal["resources"]] == ["ok", "ok"]
    done = await crm.compensate(moved.journal)

    assert done.journal["status"] == "done", done.journal
    assert [(r["resource"], r["versionLeft"]) for r in done.journal["resources"]] == [
        (D881, "v14"),
        (D882, "v6"),
    ]
    assert ((await crm.deal("D-881"))["amount"], (await crm.deal("D-882"))["amount"]) == (
        "48000.00",
        "12500.00",
    )


@pytest.mark.parametrize("edited", ["D-881", "D-882"])
async def test_a_colleagues_edit_of_either_deal_is_the_conflict_named_and_nothing_is_overwritten(
    crm, edited: str
) -> None:
    moved = await crm.call("move_amount", from_deal="D-881", to_deal="D-882", amount="500.00")
    edit_deal(crm.journal.engine, edited, stage="Lost", by="eve@acme.com")
    amounts = {deal: (await crm.deal(deal))["amount"] for deal in ("D-881", "D-882")}

    checked = await crm.call("hatp_journal_check", token=moved.journal["compensationToken"])
    refused = await crm.compensate(moved.journal)

    for answer in (checked.journal, refused.journal):
        assert (answer["status"], answer["code"]) == ("conflict", "UNDO_CONFLICT")
        assert answer["message"].startswith(f"crm://acme/deal/{edited}: stage is now Lost")
        assert answer["changedBy"] == "eve@acme.com"
        conflicted = [r["resource"] for r in answer["resources"] if r["status"] == "conflict"]
        assert conflicted == [f"crm://acme/deal/{edited}"]
    assert refused.error
    for deal in ("D-881", "D-882"):
        now = await crm.deal(deal)
        assert now["amount"] == amounts[deal]
    assert (await crm.deal(edited))["stage"] == "Lost"


async def test_a_move_to_the_same_deal_or_beyond_its_worth_is_refused_and_changes_nothing(crm) -> None:
    same = await crm.call("move_amount", from_deal="D-881", to_deal="D-881", amount="1.00")
    too_much = await crm.call("move_amount", from_deal="D-883", to_deal="D-881", amount="99999.00")

    assert same.error
    assert too_much.error
    assert (await crm.deal("D-881"))["version"] == "v12"
    with Session(crm.journal.engine) as session:
        assert session.exec(select(UndoWrite).where(col(UndoWrite.resource) == D881)).all() == []
