"""Through the gateway: under requireVerified, a call is forwarded when an attestation names the
operation, as the server declares it now, and the key the Recorder pinned for that server (the
other refusals are in policy/)."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.types import CallToolResult

from hatp_journal.conformance.attestation import attest
from hatp_journal.conformance.results import CheckOutcome, OperationReport, SuiteResult
from hatp_journal.conformance.runner import suite_info
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import META_KEY, Declaration

EXAMPLE = Path(__file__).parents[1] / "toolkit" / "example_server.py"


def deals(tmp_path: Path, name: str) -> list[str]:
    """The example server's arguments, with its database and key named ``name``."""
    return [str(EXAMPLE), "--db", str(tmp_path / f"{name}.db"), "--key", str(tmp_path / f"{name}.key")]


async def published_declaration(tmp_path: Path) -> Declaration:
    """set_stage's declaration as the example server publishes it in tools/list."""
    async with Client(StdioTransport(sys.executable, deals(tmp_path, "listed"))) as client:
        [tool] = [tool for tool in await client.list_tools() if tool.name == "set_stage"]
    return Declaration.model_validate((tool.meta or {})[META_KEY])


def attestation_of_set_stage(server_key: SigningKey, signer: SigningKey, declaration: Declaration) -> bytes:
    result = SuiteResult(
        suite=suite_info(),
        target="example_server.py",
        kind="server",
        server="example://deals",
        server_keys=[server_key.public.wire()],
        started_at="2026-11-01T08:59:00Z",
        finished_at="2026-11-01T09:00:00Z",
        outcomes=[CheckOutcome(requirement="J-4.3", operation="set_stage", outcome="passed")],
        operations=[
            OperationReport(
                tool="set_stage", kind="compensate", verified=True, declaration_digest=declaration.digest()
            )
        ],
        passed=True,
    )
    return json.dumps(attest(result, signer, FakeClock()()).wire()).encode()


async def call_set_stage_attested_as(
    tmp_path: Path, declaration: Declaration
) -> tuple[CallToolResult, dict[str, Any]]:
    """Call set_stage through a Recorder whose policy trusts an attestation of ``declaration``; the
    result and the decision journaled."""
    signer, attested_key = SigningKey.generate(), SigningKey.generate()
    attested_key.save(tmp_path / "attested.key")
    attested = attestation_of_set_stage(attested_key, signer, declaration)
    (tmp_path / "set_stage.attestation.json").write_bytes(attested)
    trust = {"signer": signer.public.wire().wire(), "files": ["set_stage.attestation.json"]}
    policy = {"autonomy": {"compensate": "allow", "requireVerified": True, "attestations": trust}}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    config = RecorderConfig(
        recorder=RecorderSection(agent="sales-bot", principal="dana"),
        servers={"attested": ServerConfig(command=sys.executable, args=deals(tmp_path, "attested"))},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=load_policy(tmp_path / "policy.json"), clock=FakeClock())
    async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
        result = await agent.call_tool_mcp("attested_set_stage", {"deal_id": "D-881", "stage": "Won"})
    assert recorder.run_id is not None
    [entry] = [entry for entry in store.entries(recorder.run_id) if "decision" in entry.body]
    return result, entry.body["decision"]


@pytest.mark.anyio
async def test_the_gateway_forwards_an_operation_attested_for_the_server_key_it_pinned(
    tmp_path: Path,
) -> None:
    forwarded, decision = await call_set_stage_attested_as(tmp_path, await published_declaration(tmp_path))

    assert not forwarded.is_error
    assert (forwarded.structured_content or {}).get("status") != "pending_approval"
    assert (decision["action"], [reason["code"] for reason in decision["reasons"]]) == ("allow", ["VERIFIED"])


@pytest.mark.anyio
async def test_the_gateway_holds_an_operation_whose_declaration_changed_since_it_was_attested(
    tmp_path: Path,
) -> None:
    published = await published_declaration(tmp_path)
    assert published.undo is not None
    longer = published.model_copy(update={"undo": published.undo.model_copy(update={"window": "P30D"})})

    held, decision = await call_set_stage_attested_as(tmp_path, longer)

    assert (held.structured_content or {}).get("status") == "pending_approval"
    [reason] = decision["reasons"]
    assert (decision["action"], reason["code"], reason["data"]["attestation"]) == (
        "ask",
        "NOT_VERIFIED",
        "OTHER_DECLARATION",
    )
