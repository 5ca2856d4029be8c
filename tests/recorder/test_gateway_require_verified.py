"""Through the gateway: under requireVerified, a call is forwarded when an attestation names the
operation and the key the Recorder pinned for that server (the refusals are in policy/)."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from fastmcp import Client

from hatp_journal.conformance.attestation import attest
from hatp_journal.conformance.results import CheckOutcome, OperationReport, SuiteResult
from hatp_journal.conformance.runner import suite_info
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.testing import FakeClock

EXAMPLE = Path(__file__).parents[1] / "toolkit" / "example_server.py"


def attestation_of_set_stage(server_key: SigningKey, signer: SigningKey) -> bytes:
    result = SuiteResult(
        suite=suite_info(),
        target="example_server.py",
        kind="server",
        server="example://deals",
        server_keys=[server_key.public.wire()],
        started_at="2026-11-01T08:59:00Z",
        finished_at="2026-11-01T09:00:00Z",
        outcomes=[CheckOutcome(requirement="J-4.3", operation="set_stage", outcome="passed")],
        operations=[OperationReport(tool="set_stage", kind="compensate", verified=True)],
        passed=True,
    )
    return json.dumps(attest(result, signer, FakeClock()()).wire()).encode()


@pytest.mark.anyio
async def test_the_gateway_forwards_an_operation_attested_for_the_server_key_it_pinned(
    tmp_path: Path,
) -> None:
    signer, attested_key = SigningKey.generate(), SigningKey.generate()
    attested_key.save(tmp_path / "attested.key")
    (tmp_path / "set_stage.attestation.json").write_bytes(attestation_of_set_stage(attested_key, signer))
    trust = {"signer": signer.public.wire().wire(), "files": ["set_stage.attestation.json"]}
    policy = {"autonomy": {"compensate": "allow", "requireVerified": True, "attestations": trust}}
    (tmp_path / "policy.json").write_text(json.dumps(policy))

    def deals(name: str) -> ServerConfig:
        arguments = ["--db", str(tmp_path / f"{name}.db"), "--key", str(tmp_path / f"{name}.key")]
        return ServerConfig(command=sys.executable, args=[str(EXAMPLE), *arguments])

    config = RecorderConfig(
        recorder=RecorderSection(agent="sales-bot", principal="dana"),
        servers={"attested": deals("attested")},
    )
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=load_policy(tmp_path / "policy.json"), clock=FakeClock())
    async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
        forwarded = await agent.call_tool_mcp("attested_set_stage", {"deal_id": "D-881", "stage": "Won"})

    assert not forwarded.is_error
    assert (forwarded.structured_content or {}).get("status") != "pending_approval"
    assert recorder.run_id is not None
    [entry] = store.entries(recorder.run_id)
    decision = entry.body["decision"]
    assert (decision["action"], [reason["code"] for reason in decision["reasons"]]) == ("allow", ["VERIFIED"])
