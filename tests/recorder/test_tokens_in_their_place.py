"""A compensation token is found wherever a tool server puts it, and only a server's token counts.

The one place for a journal object is the object ``_meta["hatp/journal"]``, and for its token that
object's top level: there the Recorder replaces it by its digest and keeps it from the agent. A
result with a journal object or a token anywhere else (wrapped in a list, nested in the object,
in ``structuredContent``, in a content block's ``_meta``) is refused whole with ``BAD_JOURNAL``:
the call is journaled as unresolved, nothing of the object kept, and the token reaches neither
the record, nor the export, nor the agent. And a member the agent names ``compensationToken`` in
its own arguments is the agent's word: the export still verifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult

from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import verify_record
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.toolkit.wire import META_KEY

pytestmark = pytest.mark.anyio

POLICY = Policy.model_validate({"autonomy": {"unknown": "allow"}})
TOKEN = "ctk_live-capability-do-not-leak"


def journal(**more: Any) -> dict[str, Any]:
    return {"protocol": "hatp/1", "undo": {"kind": "compensate"}, "compensationToken": TOKEN, **more}


ASTRAY: dict[str, dict[str, Any]] = {
    "wrapped in a list": {"meta": {META_KEY: [journal()]}},
    "nested in the object": {
        "meta": {META_KEY: {"protocol": "hatp/1", "effect": {"compensationToken": TOKEN}}}
    },
    "in a list inside the object": {"meta": {META_KEY: {"undo": {"kind": "compensate"}, "x": [journal()]}}},
    "beside the object in _meta": {"meta": {"other": {"compensationToken": TOKEN}}},
    "a second journal in _meta": {"meta": {"vendor": {META_KEY: journal()}}},
    "in structured content": {"structured_content": {"receipt": journal()}},
}


def hostile_server() -> FastMCP:
    """``astray(how)`` answers with a token or journal object put where ``ASTRAY[how]`` says;
    ``refuse`` fails whatever it is given."""
    mcp = FastMCP("hostile")

    @mcp.tool
    def astray(how: str) -> ToolResult:
        return ToolResult(content="done", **ASTRAY[how])

    @mcp.tool
    def refuse(note: dict[str, Any]) -> str:
        raise ToolError("no")

    return mcp


@pytest.mark.parametrize("how", ASTRAY)
async def test_a_token_anywhere_but_its_place_is_refused_and_reaches_neither_record_export_nor_agent(
    tmp_path: Path, how: str
) -> None:
    async with recorder_world(tmp_path, {"shop": hostile_server()}, POLICY) as world:
        answer = await world.agent.call_tool_mcp("shop_astray", {"how": how})
        [call] = [entry for entry in world.entries() if entry.kind == "call"]
        exported = export_run(world.store, world.run).to_bytes()
        [step] = steps_of(world.entries())
        key = world.store.public_key

    said = answer.model_dump_json(by_alias=True)
    assert answer.is_error
    assert answer.structured_content is not None
    assert answer.structured_content["code"] == "BAD_JOURNAL"
    assert TOKEN not in said
    assert TOKEN not in json.dumps(call.body)
    assert TOKEN.encode() not in exported
    assert call.body["intake"]["status"] == "unresolved"
    assert call.body["intake"]["reason"].startswith("BAD_JOURNAL: ")
    assert call.body["outcome"] == {"status": "ok"}  # the tool acted: the call is journaled as it went
    assert step.kind == "unresolved"
    assert "BAD_JOURNAL" in (step.reason or "")
    assert verify_record(exported, recorder_keys={key.kid: key}).ok


async def test_an_agents_argument_named_compensation_token_does_not_poison_the_export(tmp_path: Path) -> None:
    async with recorder_world(tmp_path, {"shop": hostile_server()}, POLICY) as world:
        answer = await world.agent.call_tool_mcp("shop_refuse", {"note": {"compensationToken": "x"}})
        [call] = [entry for entry in world.entries() if entry.kind == "call"]
        verifies = world.verifies()

    assert answer.is_error  # the tool refused: the call is journaled all the same
    assert call.body["arguments"] == {"note": {"compensationToken": "x"}}
    assert verifies
