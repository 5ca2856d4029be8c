"""The Recorder serves the agent over streamable HTTP on 127.0.0.1, and SIGTERM closes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from fastmcp import Client
from support.http_recorder import start_http_recorder
from support.ports import free_port, wait_listening

from hatp_journal.recorder.config import RecorderConfig, ServerConfig
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

pytestmark = pytest.mark.anyio

PLAIN = Path(__file__).parent / "plain_server.py"


async def test_an_agent_over_http_reaches_the_downstream_tools_and_sigterm_closes_the_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "allow"}}))
    (tmp_path / "recorder.toml").write_text(
        f"[servers.plain]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(PLAIN))}]\n"
    )
    process, port = start_http_recorder("recorder.toml", tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_listening(port, process, "the Recorder")
        async with Client(url) as agent:
            result = await agent.call_tool_mcp("plain_shout", {"text": "hi"})
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=20)

    assert not result.is_error
    assert result.structured_content == {"result": "HI"}
    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    [run] = store.runs()
    assert run.closed_at is not None, errors.decode()[-2000:]
    assert [e.body["tool"] for e in store.entries(run.id)] == ["shout"]
    assert b"Traceback" not in errors, errors.decode()[-2000:]  # the web server stopped in order


async def test_a_downstream_reached_over_http_is_forwarded_and_its_receipts_verified(tmp_path: Path) -> None:
    port = free_port()
    serve = ["serve", "--db", "crm.db", "--transport", "http", "--port", str(port)]
    crm = subprocess.Popen(
        [sys.executable, "-m", "hatp_journal.servers.crm.cli", *serve],
        cwd=tmp_path,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_listening(port, crm, "the CRM")
        (tmp_path / "policy.json").write_text(json.dumps({"autonomy": {"compensate": "allow"}}))
        config = RecorderConfig(servers={"crm": ServerConfig(url=url)})
        store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
        recorder = Recorder(config, store=store, policy=load_policy(tmp_path / "policy.json"))
        async with AsyncExitStack() as stack:
            mcp = await recorder.start(stack)
            async with Client(mcp) as agent:
                won = await agent.call_tool_mcp("crm_update_deal", {"deal_id": "D-881", "stage": "Won"})
    finally:
        crm.terminate()
        crm.wait(timeout=20)

    assert not won.is_error
    assert recorder.run_id is not None
    [entry] = store.entries(recorder.run_id)
    assert entry.body["intake"] == {"status": "verified", "kind": "compensate"}
