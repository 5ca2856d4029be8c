"""An ask (or plan) the store holds in a shape no reader can use is named, never a crash (issue 29).

The measured crashes: one ask entry without ``decideBy`` made ``hatp-recorder asks`` exit 2 for every
run ("error: decideBy", no entry named), and approve/deny with it; the Asks page died on an ask whose
``decision`` is not an object; an agent whose run held such an ask got an error for its next call.
Each entry here is written straight through the store's append (chained and sealed as any body), as
an edited or hostile store would hold it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from stored_entries_world import TEMPLATES, Store, Tally, command, signed_in_pages

from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.runs.asks import Asks
from hatp_journal.recorder.testing import LEAD, LEE, recorder_world


def with_ask(tmp_path: Path, **changes: Any) -> tuple[Store, str]:
    """A store with a control run (a pending ask) and a run whose one ask has ``changes`` (None: dropped)."""
    shared = Store.make(tmp_path / "org")
    body = {**TEMPLATES["ask"], **changes}
    run = shared.store.open_run(agent="bot", principal="dana").id
    entry = shared.store.append(run, "ask", {k: v for k, v in body.items() if v is not None})
    return shared, f"{run}/{entry.id}"


def test_an_ask_without_decide_by_is_named_by_asks_and_every_other_ask_is_still_listed(
    tmp_path: Path,
) -> None:
    shared, odd = with_ask(tmp_path, decideBy=None)
    tally = Tally()

    said = command(tally, shared.config, "asks")

    assert tally.outcomes == {"asks: exit 0": 1}
    assert shared.control_ask in said
    [line] = [line for line in said.splitlines() if odd in line]
    assert "unreadable" in line
    assert "BODY_UNREADABLE: decideBy" in line


def test_approving_or_denying_an_unreadable_ask_names_it_and_records_nothing(tmp_path: Path) -> None:
    shared, odd = with_ask(tmp_path, decideBy="tomorrow")
    run = odd.split("/")[0]
    before = len(shared.store.entries(run))
    tally = Tally()
    key = str(shared.root / "lee.key")

    approved = command(tally, shared.config, "approve", odd, "--as", LEE, "--key", key)
    denied = command(tally, shared.config, "deny", odd, "--as", LEE, "--key", key)

    assert tally.outcomes == {"approve: exit 2 BODY_UNREADABLE": 1, "deny: exit 2 BODY_UNREADABLE": 1}
    assert f"{odd} (ask) is unreadable: BODY_UNREADABLE: decideBy" in approved
    assert odd in denied
    assert len(shared.store.entries(run)) == before


def test_an_ask_whose_counted_decision_cannot_be_read_is_unreadable_not_approved(tmp_path: Path) -> None:
    shared, ask = with_ask(tmp_path)
    run, ask_id = ask.split("/")
    decision = {**TEMPLATES["decision"], "ask": ask_id, "approval": "approve"}
    shared.store.append(run, "decision", decision)

    [found] = Asks(shared.store).all(run)

    assert found.state == "unreadable"
    assert found.marker().text() == "BODY_UNREADABLE: its decision e2: approval"


def test_the_asks_page_lists_the_readable_asks_and_names_one_whose_decision_is_not_an_object(
    tmp_path: Path,
) -> None:
    shared, odd = with_ask(tmp_path, decision="allow")

    with signed_in_pages(shared.config) as (_, client):
        listed = client.get("/asks")
        shown = client.get(f"/asks/{odd}")

    assert listed.status_code == 200
    assert f'data-ref="{shared.control_ask}"' in listed.text
    assert f"{odd} cannot be shown: BODY_UNREADABLE: decision" in listed.text
    assert shown.status_code == 409
    assert "BODY_UNREADABLE" in shown.text


def test_what_did_not_fit_is_shown_with_its_control_characters_escaped(tmp_path: Path) -> None:
    shared, odd = with_ask(tmp_path, decision={"totals": {"\x1b[2J\ncap": 5}})
    tally = Tally()

    said = command(tally, shared.config, "asks")

    [line] = [line for line in said.splitlines() if odd in line]
    assert "decision.totals.\\x1b[2J\\ncap" in line


@pytest.mark.anyio
async def test_an_agent_whose_run_holds_an_unreadable_ask_still_gets_its_calls_answered(
    tmp_path: Path,
) -> None:
    shop = FastMCP("shop")

    @shop.tool
    def publish(n: int) -> str:
        return f"published {n}"

    policy = Policy.model_validate({"autonomy": {"unknown": "ask", "approver": LEAD}})
    async with recorder_world(tmp_path, {"shop": shop}, policy) as world:
        first = await world.agent.call_tool("shop_publish", {"n": 1}, raise_on_error=False)
        world.store.append(world.run, "ask", {**TEMPLATES["ask"], "decideBy": 7})

        again = await world.agent.call_tool("shop_publish", {"n": 1}, raise_on_error=False)
        other = await world.agent.call_tool("shop_publish", {"n": 2}, raise_on_error=False)

    told = [answer.structured_content or {} for answer in (first, again, other)]
    assert [t.get("status") for t in told] == ["pending_approval"] * 3
    assert [t.get("ask") for t in told] == ["e1", "e1", "e3"]  # e2 is the unreadable ask
