"""Two replicas of ``hatp-crm serve`` on one PostgreSQL store: a token minted by one is checked and
compensated by the other, and compensating it from both at once runs the compensation once."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from conftest import CLI, Crm, Reply
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # two server processes start, one by one


@pytest.fixture
async def replicas(postgres_url: str, tmp_path: Path) -> AsyncIterator[tuple[Crm, Crm]]:
    """Two ``hatp-crm serve`` processes on one store, sharing the server's signing key."""
    arguments = [*CLI, "serve", "--db", postgres_url, "--key", str(tmp_path / "crm.key")]
    async with AsyncExitStack() as stack:
        started = []
        for _ in range(2):  # one after the other: the first creates the key the second loads
            transport = StdioTransport(sys.executable, arguments, env=dict(os.environ), cwd=str(tmp_path))
            client = await stack.enter_async_context(Client(transport))
            started.append(Crm(client, tmp_path / "unused.db"))
        yield started[0], started[1]


async def test_a_token_minted_by_one_replica_is_checked_and_compensated_by_the_other_exactly_once(
    replicas: tuple[Crm, Crm],
) -> None:
    first, second = replicas
    won = await first.call("update_deal", deal_id="D-881", stage="Won")
    assert won.journal["undo"]["kind"] == "compensate"

    check = await second.call("hatp_journal_check", token=won.journal["compensationToken"])
    assert check.journal["status"] == "ok"

    answers: list[Reply] = []

    async def compensate(replica: Crm) -> None:
        answers.append(await replica.compensate(won.journal))

    async with anyio.create_task_group() as both:
        both.start_soon(compensate, first)
        both.start_soon(compensate, second)

    assert [answer.journal["status"] for answer in answers] == ["done", "done"]
    assert answers[0].journal == answers[1].journal  # the second got the first's answer back
    for replica in replicas:
        deal = await replica.deal()
        assert (deal["stage"], deal["version"]) == ("Proposal", "v14")  # one compensation, not two
