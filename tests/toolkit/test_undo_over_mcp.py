"""A journaled call and its undo, end to end through a real MCP client (memory and stdio)."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client

from hatp_journal.toolkit.signing import VerifyKey, verify_answer, verify_call
from hatp_journal.toolkit.wire import META_KEY, KeysAnswer

pytestmark = pytest.mark.anyio


async def published_keys(client: Client[Any]) -> dict[str, VerifyKey]:
    """The server's keys as ``hatp_journal_keys`` publishes them."""
    result = await client.call_tool_mcp("hatp_journal_keys", {})
    answer = KeysAnswer.model_validate(result.meta[META_KEY] if result.meta else {})
    return {key.kid: VerifyKey.from_wire(key) for key in answer.keys}


def journal_of(result: Any) -> dict[str, Any]:
    assert result.meta is not None
    journal: dict[str, Any] = result.meta[META_KEY]
    return journal


async def stage_of(client: Client[Any], deal_id: str = "D-881") -> str:
    result = await client.call_tool_mcp("get_deal", {"deal_id": deal_id})
    assert result.structured_content is not None
    stage: str = result.structured_content["stage"]
    return stage


async def test_a_call_is_journaled_checked_compensated_once_and_a_retry_changes_nothing(
    client: Client[Any],
) -> None:
    arguments = {"deal_id": "D-881", "stage": "Won"}
    result = await client.call_tool_mcp("set_stage", arguments)
    journal = journal_of(result)
    keys = await published_keys(client)

    assert not result.is_error
    assert verify_call(journal, "set_stage", arguments, keys)
    assert journal["effect"]["summary"] == "Deal D-881 stage: Proposal → Won"
    assert (journal["effect"]["before"], journal["effect"]["version"]) == ("v12", "v13")
    assert journal["undo"]["kind"] == "compensate"
    assert journal["compensationToken"].startswith("ctk_")
    assert await stage_of(client) == "Won"

    token = journal["compensationToken"]
    check = journal_of(await client.call_tool_mcp("hatp_journal_check", {"token": token}))
    assert check["status"] == "ok"
    assert verify_answer(check, keys)
    assert await stage_of(client) == "Won"

    undo = {"token": token, "ifVersion": journal["effect"]["version"]}
    first = await client.call_tool_mcp("hatp_journal_compensate", undo)
    assert not first.is_error
    assert journal_of(first)["status"] == "done"
    assert journal_of(first)["versionFound"] == "v13"
    assert verify_answer(journal_of(first), keys)
    assert await stage_of(client) == "Proposal"

    second = await client.call_tool_mcp("hatp_journal_compensate", undo)
    assert journal_of(second) == journal_of(first)
    assert await stage_of(client) == "Proposal"
    after = journal_of(await client.call_tool_mcp("hatp_journal_check", {"token": token}))
    assert after["status"] == "done"


async def test_declarations_are_published_with_consistent_mcp_hints(client: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    set_stage = tools["set_stage"]
    assert set_stage.meta is not None
    assert set_stage.meta[META_KEY]["undo"] == {
        "kind": "compensate",
        "window": "P7D",
        "windowSeconds": 604800,
        "via": "api",
        "sideEffects": [],
    }
    assert set_stage.annotations is not None
    assert set_stage.annotations.read_only_hint is False
    assert set_stage.annotations.destructive_hint is False

    send_note = tools["send_note"]
    assert send_note.meta is not None
    assert send_note.meta[META_KEY]["reason"] == "delivered to external recipients"
    assert send_note.annotations is not None
    assert send_note.annotations.destructive_hint is True

    get_deal = tools["get_deal"]
    assert get_deal.meta is not None
    assert get_deal.meta[META_KEY]["read"] is True
    assert get_deal.annotations is not None
    assert get_deal.annotations.read_only_hint is True
    assert {"hatp_journal_check", "hatp_journal_compensate", "hatp_journal_keys"} <= set(tools)


async def test_an_irreversible_call_carries_its_reason_and_remedy_and_no_token(
    client: Client[Any],
) -> None:
    arguments = {"to": "buyer@globex.com", "text": "Welcome!"}
    result = await client.call_tool_mcp("send_note", arguments)
    journal = journal_of(result)

    assert journal["undo"]["kind"] == "none"
    assert journal["reason"] == "delivered to external recipients"
    assert journal["remedy"] == "send a correction email"
    assert "compensationToken" not in journal
    assert verify_call(journal, "send_note", arguments, await published_keys(client))


async def test_a_receipt_fails_to_verify_for_other_arguments_or_a_changed_summary(
    client: Client[Any],
) -> None:
    arguments = {"deal_id": "D-881", "stage": "Won"}
    journal = journal_of(await client.call_tool_mcp("set_stage", arguments))
    keys = await published_keys(client)

    assert not verify_call(journal, "set_stage", {"deal_id": "D-881", "stage": "Lost"}, keys)
    assert not verify_call(journal, "update_deal", arguments, keys)
    forged = {**journal, "effect": {**journal["effect"], "summary": "Deal D-881 unchanged"}}
    assert not verify_call(forged, "set_stage", arguments, keys)


async def test_malformed_arguments_are_refused_with_a_code_naming_the_fields(
    client: Client[Any],
) -> None:
    result = await client.call_tool_mcp("set_stage", {"deal_id": 7})

    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["code"] == "INVALID_ARGUMENTS"
    assert sorted(result.structured_content["data"]["fields"]) == ["deal_id", "stage"]
    assert await stage_of(client) == "Proposal"


async def test_an_unknown_or_forged_token_is_refused_and_changes_nothing(client: Client[Any]) -> None:
    journal = journal_of(await client.call_tool_mcp("set_stage", {"deal_id": "D-881", "stage": "Won"}))
    forged = journal["compensationToken"][:-2] + "xx"

    check = journal_of(await client.call_tool_mcp("hatp_journal_check", {"token": forged}))
    undo = await client.call_tool_mcp("hatp_journal_compensate", {"token": forged, "ifVersion": "v13"})

    assert check["code"] == "UNDO_UNKNOWN_TOKEN"
    assert undo.is_error
    assert journal_of(undo)["code"] == "UNDO_UNKNOWN_TOKEN"
    assert await stage_of(client) == "Won"
