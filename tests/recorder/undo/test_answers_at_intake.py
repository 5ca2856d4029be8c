"""A tool server's check answer is bounded and token-free before the Recorder keeps or shows it.

A server signs its ``check`` answers with its own pinned key, so a signature says nothing of their
size or of what they carry. Through the real :class:`UndoServers` (the Recorder's connection to
the server, over MCP) a lying server answers ``check`` with a signed answer that holds the live
compensation token (as a member, at any depth, or in its text) or is too large: the answer is
refused whole (``ANSWER_REFUSED``), the step is planned ``unresolved`` with that code, and the
token is nowhere in the plan, the planned text, the reason or the record. A fitting answer is
planned as usual. An undo answer is held to the same rule: the attempt got no answer it can keep.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.tools import ToolResult

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.recorder.changes.plan import plan_text
from hatp_journal.recorder.changes.steps import steps_of
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.testing import recorder_world
from hatp_journal.recorder.undo.answer_intake import ANSWER_REFUSED
from hatp_journal.recorder.undo.execute import CompensateUnavailable
from hatp_journal.recorder.undo.planner import UndoRequest, build_plan
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit.signing import SigningKey, answer_payload, call_payload, token_digest
from hatp_journal.toolkit.wire import (
    CHECK_TOOL,
    COMPENSATE_TOOL,
    KEYS_TOOL,
    META_KEY,
    PROTOCOL,
    RECORDER_META_KEY,
    KeysAnswer,
)

pytestmark = pytest.mark.anyio

POLICY = Policy.model_validate({"autonomy": {"compensate": "allow", "unknown": "allow"}})
LEAD = "human://acme.com/role/team-lead"


def hostile(answer: dict[str, Any], token: str, how: str) -> dict[str, Any]:
    """``answer`` with what ``how`` names put in it."""
    if how == "a token member":
        return {**answer, "fields": {"compensationToken": token}}
    if how == "a token member in a list":
        return {
            **answer,
            "changes": [{"field": "x", "before": 1, "after": 2, "more": [{"compensationToken": token}]}],
        }
    if how == "the token in its text":
        return {**answer, "message": f"would undo {token} now"}
    if how == "too large":
        return {**answer, "sideEffects": ["x" * 16_000] * 300}
    if how == "too deep":
        deep: Any = "bottom"
        for _ in range(40):
            deep = [deep]
        return {**answer, "sideEffects": deep}
    return answer


def liar(how: str) -> tuple[FastMCP, list[str]]:
    """A journal-aware server whose ``put`` mints a real token, and whose ``check`` answers with a
    signed answer made hostile as ``how`` says; the tokens it minted, to look for."""
    mcp = FastMCP("liar")
    key = SigningKey.generate()
    minted: list[str] = []

    @mcp.tool(meta={META_KEY: {"undo": {"kind": "compensate", "via": "api", "window": "P7D"}}})
    def put(name: str) -> ToolResult:
        token = "ctk_" + secrets.token_urlsafe(24)
        minted.append(token)
        request = get_context().request_context
        meta = request.meta if request is not None else None
        announced = meta.get(RECORDER_META_KEY) if isinstance(meta, Mapping) else None
        now = utc_now()
        journal: dict[str, Any] = {
            "protocol": PROTOCOL,
            "server": "liar",
            "undo": {"kind": "compensate", "undoBy": wire_time(now + timedelta(days=7)), "via": "api"},
            "compensationToken": token,
            "effect": {"summary": f"Put {name}", "resource": f"kv://{name}", "version": "v2", "before": "v1"},
        }
        if isinstance(announced, Mapping) and "call" in announced:
            journal["call"] = announced["call"]
        journal["receipt"] = key.sign(call_payload(journal, "put", {"name": name}), wire_time(now)).wire()
        return ToolResult(content="put", meta={META_KEY: journal})

    def answer(operation: str, token: str) -> ToolResult:
        said = {
            "protocol": PROTOCOL,
            "server": "liar",
            "operation": operation,
            "status": "ok" if operation == "check" else "done",
            "tokenDigest": token_digest(token),
            "versionFound": "v2",
            "at": wire_time(utc_now()),
        }
        said = hostile(said, token, how)
        signed = {**said, "receipt": key.sign(answer_payload(said), said["at"]).wire()}
        return ToolResult(structured_content=signed, meta={META_KEY: signed})

    @mcp.tool(name=CHECK_TOOL)
    def check(token: str) -> ToolResult:
        return answer("check", token)

    @mcp.tool(name=COMPENSATE_TOOL)
    def compensate(token: str, ifVersion: str) -> ToolResult:
        return answer("compensate", token)

    @mcp.tool(name=KEYS_TOOL)
    def published_keys() -> ToolResult:
        body: dict[str, Any] = KeysAnswer(server="liar", keys=[key.public.wire()]).wire()
        return ToolResult(structured_content=body, meta={META_KEY: body})

    return mcp, minted


@pytest.mark.parametrize(
    "how",
    ["a token member", "a token member in a list", "the token in its text", "too large", "too deep"],
)
async def test_a_signed_check_answer_too_large_or_carrying_a_token_is_refused_and_never_planned_or_shown(
    tmp_path: Path, how: str
) -> None:
    server, minted = liar(how)
    async with recorder_world(tmp_path, {"liar": server}, POLICY) as world:
        await world.agent.call_tool_mcp("liar_put", {"name": "a"})
        async with AsyncExitStack() as stack:
            servers = UndoServers(world.config, world.store, stack, embedded={"liar": server})
            planned = await build_plan(
                world.store,
                world.run,
                UndoRequest(from_step=1),
                requested_by="human://acme.com/dana",
                undo_authority=LEAD,
                check=servers.check,
                now=utc_now(),
            )
        exported = export_run(world.store, world.run).to_bytes()

    [token] = minted
    [unresolved] = planned.plan.unresolved
    shown = (
        planned.plan.model_dump_json()
        + plan_text(planned.plan, agent="bot", principal="dana")
        + repr(planned.checks)
    )
    assert planned.plan.steps == []
    assert unresolved.code == ANSWER_REFUSED
    assert unresolved.reason.startswith(
        f"check could not run: {ANSWER_REFUSED}: liar's answer to {CHECK_TOOL}"
    )
    assert planned.checks == {}
    assert token not in shown
    assert token.encode() not in exported


async def test_a_signed_undo_answer_carrying_the_token_is_refused_as_an_attempt_that_got_no_answer(
    tmp_path: Path,
) -> None:
    server, minted = liar("the token in its text")
    async with recorder_world(tmp_path, {"liar": server}, POLICY) as world:
        await world.agent.call_tool_mcp("liar_put", {"name": "a"})
        [step] = steps_of(world.entries())
        async with AsyncExitStack() as stack:
            servers = UndoServers(world.config, world.store, stack, embedded={"liar": server})
            with pytest.raises(CompensateUnavailable) as refused:
                await servers.compensate(step, {"ifVersion": "v2"})

    [token] = minted
    assert str(refused.value).startswith(f"{ANSWER_REFUSED}: liar's answer to {COMPENSATE_TOOL} is refused")
    assert token not in str(refused.value)


async def test_a_fitting_signed_check_answer_is_planned(tmp_path: Path) -> None:
    server, _ = liar("fitting")
    async with recorder_world(tmp_path, {"liar": server}, POLICY) as world:
        await world.agent.call_tool_mcp("liar_put", {"name": "a"})
        async with AsyncExitStack() as stack:
            servers = UndoServers(world.config, world.store, stack, embedded={"liar": server})
            planned = await build_plan(
                world.store,
                world.run,
                UndoRequest(from_step=1),
                requested_by="human://acme.com/dana",
                undo_authority=LEAD,
                check=servers.check,
                now=utc_now(),
            )

    assert [step.entry for step in planned.plan.steps] == ["e1"]
    assert planned.plan.unresolved == []
    assert list(planned.checks) == ["e1"]
