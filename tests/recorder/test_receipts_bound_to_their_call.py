"""A call receipt is bound to the call it was issued for (docs/binding.md, docs/run-record.md §2).

The Recorder names each call it forwards (``{run, id}`` in ``_meta["hatp/recorder"].call``); a
toolkit server echoes it in the journal object its receipt signs. Every genuine call of a run is
then signed with its own id, so a receipt copied into a later entry or another run's record is
found by the verifier; and a server that answers a call with the receipt of an earlier one is kept
``unresolved`` by the Recorder, its replay flagged in the export, never counted as a second call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.tools import ToolResult

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import verify_record
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.servers.crm.server import build as build_crm
from hatp_journal.toolkit.signing import SigningKey, call_payload
from hatp_journal.toolkit.wire import KEYS_TOOL, META_KEY, RECORDER_META_KEY, KeysAnswer

pytestmark = pytest.mark.anyio

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schema"


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


POLICY = Policy.model_validate(
    {"autonomy": {"read": "allow", "unknown": "allow", "none": "allow", "compensate": "allow"}}
)


def replaying_server() -> FastMCP:
    """A journal-aware server whose ``send`` signs its first call honestly (echoing the binding it
    was sent) and answers every later one with that first signed result: a replayed receipt, which
    verifies for a later call with the same arguments."""
    mcp = FastMCP("mailer")
    key = SigningKey.generate()
    first: list[ToolResult] = []

    @mcp.tool(meta={META_KEY: {"undo": {"kind": "none"}, "reason": "delivered"}})
    def send(to: str) -> ToolResult:
        if not first:
            request = get_context().request_context
            meta = request.meta if request is not None else None
            announced = meta.get(RECORDER_META_KEY) if isinstance(meta, Mapping) else None
            assert isinstance(announced, Mapping)
            journal: dict[str, Any] = {
                "protocol": "hatp-journal/0.3",
                "server": "mailer",
                "undo": {"kind": "none"},
                "reason": "delivered",
                "effect": {"summary": f"Mail to {to}", "resource": f"mail://{to}"},
                "call": announced["call"],
            }
            receipt = key.sign(call_payload(journal, "send", {"to": to}), wire_time(utc_now()))
            journal["receipt"] = receipt.wire()
            first.append(ToolResult(content="sent", meta={META_KEY: journal}))
        return first[0]

    @mcp.tool(name=KEYS_TOOL)
    def published_keys() -> ToolResult:
        body: dict[str, Any] = KeysAnswer(server="mailer", keys=[key.public.wire()]).wire()
        return ToolResult(structured_content=body, meta={META_KEY: body})

    return mcp


async def test_each_call_through_the_recorder_is_signed_for_its_run_with_an_id_of_its_own(
    tmp_path: Path,
) -> None:
    crm, _ = build_crm(tmp_path / "crm.db", SigningKey.generate())
    async with recorder_world(tmp_path, {"crm": crm}, POLICY) as world:
        for _ in range(2):  # the same read twice: honestly alike but for its binding
            await world.agent.call_tool_mcp("crm_get_deal", {"deal_id": "D-881"})
        await world.agent.call_tool_mcp("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})
        calls = [entry for entry in world.entries() if entry.kind == "call"]
        run, verifies = world.run, world.verifies()
        exported = json.loads(export_run(world.store, world.run).to_bytes())

    # The published schemas take the bound journal objects and the signed pins as an outside
    # validator reads them.
    jsonschema.validate(exported, schema("run-record"))
    for call in calls:
        jsonschema.validate(call.body["journal"], schema("journal-object"))
    assert all("receipt" in key for keys in exported["serverKeys"].values() for key in keys)
    bindings = [call.body["journal"]["call"] for call in calls]
    assert [call.body["intake"]["status"] for call in calls] == ["verified"] * 3
    assert {binding["run"] for binding in bindings} == {run}
    assert len({binding["id"] for binding in bindings}) == 3
    assert calls[0].body["journal"]["receipt"]["sig"] != calls[1].body["journal"]["receipt"]["sig"]
    assert verifies


async def test_a_server_answering_with_an_earlier_calls_receipt_is_kept_unresolved_and_flagged(
    tmp_path: Path,
) -> None:
    async with recorder_world(tmp_path, {"mail": replaying_server()}, POLICY) as world:
        for key in ("first", "second"):  # the same mail sent twice, meant twice: two calls
            meta = {"hatp/idempotencyKey": key}
            await world.agent.call_tool_mcp("mail_send", {"to": "buyer@globex.com"}, meta=meta)
        first, again = [entry for entry in world.entries() if entry.kind == "call"]
        exported = export_run(world.store, world.run).to_bytes()
        key = world.store.public_key

    report = verify_record(exported, recorder_keys={key.kid: key})

    assert first.body["intake"]["status"] == "verified"
    assert again.body["intake"] == {
        "status": "unresolved",
        "kind": "unknown",
        "reason": "journal object bound to another call",
    }
    assert report.problems == []
    assert [(p.entry, p.check.value) for p in report.flagged] == [(again.id, "RECEIPT_REPLAYED")]
