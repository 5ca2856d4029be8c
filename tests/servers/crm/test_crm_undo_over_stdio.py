"""The D-881 deal step over stdio, as an agent host runs ``hatp-crm serve`` (one process: it is slow
to start). Eve edits with the real ``hatp-crm edit`` command line, on the same store."""

from __future__ import annotations

import pytest

from hatp_journal.servers.crm.cli import main
from hatp_journal.toolkit.signing import VerifyKey, verify_answer, verify_call
from hatp_journal.toolkit.wire import KeysAnswer

pytestmark = pytest.mark.anyio


async def test_over_stdio_undo_restores_proposal_and_after_eves_edit_undo_is_a_conflict_keeping_her_stage(
    stdio_crm,
) -> None:
    arguments = {"deal_id": "D-881", "stage": "Won"}
    won = await stdio_crm.call("update_deal", **arguments)
    keys_reply = await stdio_crm.call("hatp_journal_keys")
    keys = {key.kid: VerifyKey.from_wire(key) for key in KeysAnswer.model_validate(keys_reply.journal).keys}

    effect = won.journal["effect"]
    assert not won.error
    assert effect["summary"] == "Deal D-881 stage: Proposal → Won"
    assert effect["changes"] == [{"field": "stage", "before": "Proposal", "after": "Won"}]
    assert (effect["resource"], effect["before"], effect["version"]) == (
        "crm://acme/deal/D-881",
        "v12",
        "v13",
    )
    assert won.journal["undo"]["kind"] == "compensate"
    assert verify_call(won.journal, "update_deal", arguments, keys)

    check = await stdio_crm.call("hatp_journal_check", token=won.journal["compensationToken"])
    assert check.journal["status"] == "ok"
    assert (await stdio_crm.deal())["stage"] == "Won"

    undo = await stdio_crm.compensate(won.journal)
    assert not undo.error
    assert undo.journal["status"] == "done"
    assert (undo.journal["versionFound"], undo.journal["versionLeft"]) == ("v13", "v14")
    assert verify_answer(undo.journal, keys)
    deal = await stdio_crm.deal()
    assert (deal["stage"], deal["version"]) == ("Proposal", "v14")

    retry = await stdio_crm.compensate(won.journal)
    assert retry.journal == undo.journal

    # The variant: the agent wins the deal again, then Eve moves it to Negotiation.
    again = await stdio_crm.call("update_deal", **arguments)
    edit = ["edit", "--db", str(stdio_crm.db), "D-881", "--stage", "Negotiation", "--by", "eve@acme.com"]
    assert main(edit) == 0

    check = await stdio_crm.call("hatp_journal_check", token=again.journal["compensationToken"])
    conflict = await stdio_crm.compensate(again.journal)

    assert check.journal["status"] == "conflict"
    assert conflict.error
    assert conflict.journal["code"] == "UNDO_CONFLICT"
    assert conflict.journal["versionFound"] == "v16"
    assert conflict.journal["changedBy"] == "eve@acme.com"
    assert conflict.journal["changes"] == [{"field": "stage", "expected": "Won", "now": "Negotiation"}]
    deal = await stdio_crm.deal()
    assert (deal["stage"], deal["version"], deal["changed_by"]) == ("Negotiation", "v16", "eve@acme.com")
