"""Two replicas of ``hatp-crm serve`` on one PostgreSQL store: a token minted by one is checked and
compensated by the other, compensating it from both at once runs the compensation once, and a
retry on the minting replica answers what the other replica answered."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # two server processes start, one by one


async def test_a_token_minted_by_one_replica_is_checked_and_compensated_by_the_other_exactly_once(
    replicas: Any,  # tuple[Crm, Crm] of conftest.py
) -> None:
    first, second = replicas
    won = await first.call("update_deal", deal_id="D-881", stage="Won")
    assert won.journal["undo"]["kind"] == "compensate"

    check = await second.call("hatp_journal_check", token=won.journal["compensationToken"])
    assert check.journal["status"] == "ok"

    answers: list[Any] = []

    async def compensate(replica: Any) -> None:
        answers.append(await replica.compensate(won.journal))

    async with anyio.create_task_group() as both:
        both.start_soon(compensate, first)
        both.start_soon(compensate, second)

    assert [answer.journal["status"] for answer in answers] == ["done", "done"]
    assert answers[0].journal == answers[1].journal  # the second got the first's answer back
    for replica in replicas:
        deal = await replica.deal()
        assert (deal["stage"], deal["version"]) == ("Proposal", "v14")  # one compensation, not two

    # Mint on the first, compensate on the second, retry the same request on the first.
    again = await first.call("update_deal", deal_id="D-881", stage="Won")
    undone = await second.compensate(again.journal, requestId="req-replicas")
    retried = await first.compensate(again.journal, requestId="req-replicas")
    assert undone.journal["status"] == "done"
    assert retried.journal == undone.journal  # the first answer, not a second compensation
    deal = await first.deal()
    assert (deal["stage"], deal["version"]) == ("Proposal", "v16")
