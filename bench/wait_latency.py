"""How soon a waiting call is forwarded after its ask is approved (``python bench/wait_latency.py``).

An agent calls a held tool with ``_meta["hatp/wait"]``; at its first progress notification the
ask is approved (signed, as ``hatp-recorder approve`` does, in this process); the time from the
approval's return to the call's result is measured. In process: the plain test server embedded,
the agent on FastMCP's in-memory transport, the record in a SQLite file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

LEAD = "human://acme.com/role/team-lead"
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "recorder"))
import plain_server  # noqa: E402 - the test server, found beside the tests


async def measure(folder: Path, calls: int) -> list[float]:
    (folder / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "ask", "approver": LEAD}}))
    lee = SigningKey.generate()
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (folder / "directory.json").write_text(json.dumps({"people": people}))
    section = RecorderSection(directory=str(folder / "directory.json"), max_wait_seconds=60)
    config = RecorderConfig(
        recorder=section, servers={"plain": ServerConfig(url="http://127.0.0.1:9/embedded")}
    )
    store = RunStore(folder / "recorder.db", SigningKey.generate())
    recorder = Recorder(
        config, store=store, policy=load_policy(folder / "policy.json"), embedded={"plain": plain_server.mcp}
    )
    directory = Directory.load(folder / "directory.json")
    seconds: list[float] = []
    async with AsyncExitStack() as stack, Client(await recorder.start(stack)) as agent:
        for number in range(calls):
            seconds.append(await one_call(agent, recorder, f"call {number}", lee, directory))
    return seconds


async def one_call(
    agent: Client[Any], recorder: Recorder, text: str, lee: SigningKey, directory: Directory
) -> float:
    """Seconds from the approval to the waiting call's result."""
    waiting = anyio.Event()
    result: list[Any] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        waiting.set()

    async def call() -> None:
        result.append(
            await agent.call_tool_mcp("plain_shout", {"text": text}, progress, meta={"hatp/wait": 60})
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        await waiting.wait()
        run = recorder.run_id or ""
        [ask] = [a for a in recorder.asks.all(run) if a.state == "pending"]
        recorder.asks.decide(
            f"{run}/{ask.entry.id}", "approve", person="lee", key=lee, directory=directory, now=utc_now()
        )
        approved = time.perf_counter()
    took = time.perf_counter() - approved
    assert result[0].structured_content == {"result": text.upper()}, result
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        seconds = anyio.run(measure, Path(folder), args.calls)
    ms = sorted(s * 1000 for s in seconds)
    print(
        f"approval to result, {len(ms)} calls: median {statistics.median(ms):.0f} ms, "
        f"max {ms[-1]:.0f} ms (poll every 200 ms)"
    )


if __name__ == "__main__":
    main()
