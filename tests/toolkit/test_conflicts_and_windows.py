"""Undo never lands on newer work, never after its window, and never twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import example_server
import pytest
from fastmcp import Client

from hatp_journal.toolkit import Journal, SigningKey
from hatp_journal.toolkit.signing import prove_compensate, verify_call
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import META_KEY, RECORDER_META_KEY

pytestmark = pytest.mark.anyio


class Deals:
    """The example server in memory, with its clock and journal at hand.

    ``recorder`` plays the Recorder: calls made ``through_recorder`` announce its key, so their
    tokens are bound to it, and ``undo(..., prove=True)`` signs the request with it.
    """

    def __init__(self, client: Client[Any], journal: Journal, clock: FakeClock) -> None:
        self.client, self.journal, self.clock = client, journal, clock
        self.recorder = SigningKey.generate()

    async def call(
        self, tool: str, meta: dict[str, Any] | None = None, **arguments: Any
    ) -> tuple[bool, dict[str, Any]]:
        result = await self.client.call_tool_mcp(tool, arguments, meta=meta)
        assert result.meta is not None
        return bool(result.is_error), result.meta[META_KEY]

    async def set_stage(self, stage: str, *, through_recorder: bool = False) -> dict[str, Any]:
        meta = {RECORDER_META_KEY: {"key": self.recorder.public.wire().wire()}} if through_recorder else None
        _, journal = await self.call("set_stage", meta=meta, deal_id="D-881", stage=stage)
        return journal

    async def undo(
        self, journal: dict[str, Any], *, prove: SigningKey | None = None, **extra: Any
    ) -> tuple[bool, dict[str, Any]]:
        if_version = extra.pop("ifVersion", journal["effect"]["version"])
        token = journal["compensationToken"]
        if prove is not None:
            extra["proof"] = prove_compensate(
                prove,
                token,
                if_version,
                request_id=extra.get("requestId"),
                override=extra.get("override"),
                issued_at="2026-11-01T09:00:00Z",
            ).wire()
        return await self.call("hatp_journal_compensate", token=token, ifVersion=if_version, **extra)

    async def stage(self) -> tuple[str, str]:
        result = await self.client.call_tool_mcp("get_deal", {"deal_id": "D-881"})
        assert result.structured_content is not None
        return result.structured_content["stage"], result.structured_content["version"]


@pytest.fixture
async def deals(tmp_path: Path) -> AsyncIterator[Deals]:
    clock = FakeClock()
    mcp, journal = example_server.build(tmp_path / "deals.db", SigningKey.generate(), clock)
    async with Client(mcp) as client:
        yield Deals(client, journal, clock)


async def test_undo_of_a_deal_changed_since_reports_conflict_with_what_changed_and_changes_nothing(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won")
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")

    _, check = await deals.call("hatp_journal_check", token=won["compensationToken"])
    failed, answer = await deals.undo(won)

    assert check["status"] == "conflict"
    assert failed
    assert answer["code"] == "UNDO_CONFLICT"
    assert answer["versionFound"] == "v14"
    assert answer["changedBy"] == "eve@acme.com"
    assert answer["changes"] == [{"field": "stage", "expected": "Won", "now": "Negotiation"}]
    assert await deals.stage() == ("Negotiation", "v14")


async def test_an_override_proven_by_the_recorder_the_token_came_through_undoes_over_the_conflict(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won", through_recorder=True)
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")
    await deals.undo(won, prove=deals.recorder)

    override = {"approval": "run_1/e7#e1", "by": "human://acme.com/dana", "versionFound": "v14"}
    failed, answer = await deals.undo(won, prove=deals.recorder, override=override, requestId="2")

    assert not failed
    assert answer["status"] == "done"
    assert answer["override"] == override
    assert (await deals.stage())[0] == "Proposal"


async def test_an_override_of_a_token_issued_through_no_recorder_is_refused_and_changes_nothing(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won")
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")

    failed, answer = await deals.undo(won, override={"approval": "forged", "by": "nobody"})

    assert failed
    assert (answer["status"], answer["code"]) == ("refused", "UNDO_OVERRIDE_REFUSED")
    assert await deals.stage() == ("Negotiation", "v14")


@pytest.mark.parametrize("proof", ["none", "another key"])
async def test_a_bound_token_without_the_recorders_proof_is_refused_with_or_without_an_override(
    deals: Deals, proof: str
) -> None:
    won = await deals.set_stage("Won", through_recorder=True)
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")
    prove = SigningKey.generate() if proof == "another key" else None

    plain_failed, plain = await deals.undo(won, prove=prove, ifVersion="v14")
    forged_failed, forged = await deals.undo(
        won, prove=prove, override={"approval": "forged", "by": "nobody"}
    )

    assert plain_failed
    assert forged_failed
    assert plain["code"] == forged["code"] == "UNDO_NOT_AUTHORIZED"
    assert await deals.stage() == ("Negotiation", "v14")


async def test_a_refused_request_is_not_remembered_so_the_recorders_own_request_still_runs(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won", through_recorder=True)

    await deals.undo(won, requestId="r1")
    failed, answer = await deals.undo(won, prove=deals.recorder, requestId="r1")

    assert not failed
    assert answer["status"] == "done"
    assert (await deals.stage())[0] == "Proposal"


async def test_an_override_for_the_version_a_person_saw_does_not_overwrite_a_newer_change(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won", through_recorder=True)
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")
    example_server.edit_outside(deals.journal, "D-881", "Lost", by="ann@acme.com")

    override = {"approval": "run_1/e7#e1", "by": "human://acme.com/dana", "versionFound": "v14"}
    failed, answer = await deals.undo(won, prove=deals.recorder, override=override)

    assert failed
    assert (answer["code"], answer["versionFound"], answer["changedBy"]) == (
        "UNDO_CONFLICT",
        "v15",
        "ann@acme.com",
    )
    assert await deals.stage() == ("Lost", "v15")


async def test_a_recorder_key_announcement_that_is_not_a_key_is_refused_and_changes_nothing(
    deals: Deals,
) -> None:
    meta = {RECORDER_META_KEY: {"key": {"kid": "ed25519-x", "publicKey": "not-a-key"}}}

    failed, answer = await deals.call("set_stage", meta=meta, deal_id="D-881", stage="Won")

    assert failed
    assert answer["error"]["code"] == "INVALID_ARGUMENTS"
    assert (await deals.stage())[0] == "Proposal"


async def test_the_call_a_recorder_names_is_echoed_in_the_journal_object_its_receipt_signs(
    deals: Deals,
) -> None:
    bound = {"run": "run_A", "id": "call-1"}
    meta = {RECORDER_META_KEY: {"key": deals.recorder.public.wire().wire(), "call": bound}}

    failed, journal = await deals.call("set_stage", meta=meta, deal_id="D-881", stage="Won")
    moved = {**journal, "call": {**bound, "run": "run_B"}}
    keys = {deals.journal.key.kid: deals.journal.key.public}

    assert not failed
    assert journal["call"] == bound
    assert verify_call(journal, "set_stage", {"deal_id": "D-881", "stage": "Won"}, keys)
    assert not verify_call(moved, "set_stage", {"deal_id": "D-881", "stage": "Won"}, keys)


@pytest.mark.parametrize(
    "bound", [{"run": 5, "id": "x"}, {"run": "run_A"}, "run_A/1", {"run": "", "id": "x"}]
)
async def test_a_call_announcement_that_is_not_a_run_and_an_id_is_refused_and_changes_nothing(
    deals: Deals, bound: Any
) -> None:
    meta = {RECORDER_META_KEY: {"key": deals.recorder.public.wire().wire(), "call": bound}}

    failed, answer = await deals.call("set_stage", meta=meta, deal_id="D-881", stage="Won")

    assert failed
    assert answer["error"]["code"] == "INVALID_ARGUMENTS"
    assert (await deals.stage())[0] == "Proposal"


async def test_an_override_without_an_approval_reference_is_refused(deals: Deals) -> None:
    won = await deals.set_stage("Won")
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")

    failed, answer = await deals.undo(won, override={"approval": "", "by": "dana"})

    assert failed
    assert answer["error"]["code"] == "INVALID_ARGUMENTS"
    assert (await deals.stage())[0] == "Negotiation"


async def test_a_clock_past_undo_by_gives_expired_and_changes_nothing(deals: Deals) -> None:
    won = await deals.set_stage("Won")
    deals.clock.advance("P7DT1S")

    _, check = await deals.call("hatp_journal_check", token=won["compensationToken"])
    failed, answer = await deals.undo(won)

    assert check["status"] == "expired"
    assert failed
    assert answer["code"] == "UNDO_EXPIRED"
    assert (await deals.stage())[0] == "Won"


async def test_undo_on_the_last_second_of_the_window_still_works(deals: Deals) -> None:
    won = await deals.set_stage("Won")
    deals.clock.advance("P7D")

    failed, answer = await deals.undo(won)

    assert not failed, answer
    assert (await deals.stage())[0] == "Proposal"


async def test_two_edits_of_one_deal_undo_in_reverse_order_without_a_false_conflict(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won")
    lost = await deals.set_stage("Lost")

    _, later = await deals.undo(lost)
    _, earlier = await deals.undo(won)

    assert later["status"] == "done"
    assert earlier["status"] == "done", earlier
    assert (await deals.stage())[0] == "Proposal"


async def test_the_earlier_edit_may_also_expect_the_version_the_later_undo_left(deals: Deals) -> None:
    won = await deals.set_stage("Won")
    lost = await deals.set_stage("Lost")

    _, later = await deals.undo(lost)
    _, earlier = await deals.undo(won, ifVersion=later["versionLeft"])

    assert earlier["status"] == "done"
    assert (await deals.stage())[0] == "Proposal"


async def test_undoing_the_earlier_edit_first_is_a_conflict(deals: Deals) -> None:
    won = await deals.set_stage("Won")
    await deals.set_stage("Lost")

    failed, answer = await deals.undo(won)

    assert failed
    assert answer["code"] == "UNDO_CONFLICT"
    assert (await deals.stage())[0] == "Lost"


async def test_a_retried_conflict_returns_the_stored_answer_and_a_new_attempt_is_decided_afresh(
    deals: Deals,
) -> None:
    won = await deals.set_stage("Won")
    example_server.edit_outside(deals.journal, "D-881", "Negotiation", by="eve@acme.com")
    _, first = await deals.undo(won)
    example_server.edit_outside(deals.journal, "D-881", "Won", by="eve@acme.com")

    _, retry = await deals.undo(won)
    _, fresh = await deals.undo(won, requestId="after-eve-reverted")

    assert retry == first
    assert fresh["status"] == "done"
    assert (await deals.stage())[0] == "Proposal"
