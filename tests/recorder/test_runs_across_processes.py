"""A run outlives its connection: a new Recorder process, or another HTTP connection, continues it.

Real processes and transports: the case is a client that starts the Recorder for each call.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from support.http_recorder import start_http_recorder
from support.ports import wait_listening
from support.waiting import until_set

from hatp_journal.recorder.cli.command_line import main as recorder_cli
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url

pytestmark = pytest.mark.anyio

LEAD = "human://acme.com/role/team-lead"
PLAIN = Path(__file__).parent / "plain_server.py"
DOC = Path(__file__).parents[2] / "docs" / "recorder.md"


def documented_entry(name: str) -> dict[str, Any]:
    """The ``recorder`` entry of the ``mcpServers`` example ``name`` in docs/recorder.md."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n```json\n(.*?)```", text, re.S)
    assert match, f"docs/recorder.md has no example named {name}"
    entry: dict[str, Any] = json.loads(match.group(1))["mcpServers"]["recorder"]
    return entry


def configure(folder: Path, *extra: str) -> Path:
    """A Recorder in front of the plain server, every call held for the team lead (lee)."""
    lee = SigningKey.generate()
    lee.save(folder / "lee.key")
    people = [{"id": "lee", "roles": [LEAD], "publicKey": b64url(lee.public.raw())}]
    (folder / "directory.json").write_text(json.dumps({"people": people}))
    (folder / "policy.json").write_text(json.dumps({"autonomy": {"unknown": "ask", "approver": LEAD}}))
    lines = [
        "[recorder]",
        'agent = "sales-bot"',
        'principal = "human://acme.com/dana"',
        'directory = "directory.json"',
        *extra,
        "[servers.plain]",
        f"command = {json.dumps(sys.executable)}",
        f"args = [{json.dumps(str(PLAIN))}]",
    ]
    (folder / "recorder.toml").write_text("\n".join(lines) + "\n")
    return folder / "recorder.toml"


def approve(config: Path, run: str, ask: str) -> None:
    lee = ["--as", "lee", "--key", str(config.parent / "lee.key")]
    assert recorder_cli(["--config", str(config), "approve", f"{run}/{ask}", *lee]) == 0


def recorded(result: Any) -> dict[str, Any]:
    assert result.meta is not None, result
    meta: dict[str, Any] = result.meta["hatp/recorder"]
    return meta


def forwarded(folder: Path, run: str) -> list[str]:
    """What the plain server answered in ``run``: one item per call that reached it."""
    store = RunStore(folder / "recorder.db", SigningKey.from_file(folder / "recorder.key"))
    return [e.body["outcome"]["status"] for e in store.entries(run) if e.kind == "call"]


async def call_in_a_new_process(
    config: Path, meta: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> Any:
    """Start a Recorder over stdio as the documented client entry does, make one call, let it go:
    what a per-call client does."""
    entry = documented_entry("mcp-servers-stdio")
    args = [str(config) if arg.endswith("recorder.toml") else arg for arg in entry["args"]]
    transport = StdioTransport(
        str(Path(sys.executable).parent / entry["command"]),  # the venv's script, as the docs advise
        args,
        env={**os.environ, **(env or {})},
        cwd=str(config.parent),
        log_file=config.parent / "recorder.log",
        keep_alive=False,
    )
    async with Client(transport, timeout=60) as agent:
        return await agent.call_tool_mcp("plain_shout", {"text": "hi"}, meta=meta)


async def test_a_call_approved_between_two_recorder_processes_is_forwarded_once_and_only_once(
    tmp_path: Path,
) -> None:
    config = configure(tmp_path)

    held = await call_in_a_new_process(config)
    run, ask, key = recorded(held)["run"], recorded(held)["ask"], recorded(held)["runKey"]
    approve(config, run, ask)
    again = await call_in_a_new_process(config, meta={"hatp/runKey": key})
    # The host hands the key over in the environment this time, as the documented entry does.
    [variable] = documented_entry("mcp-servers-stdio")["env"]
    repeat = await call_in_a_new_process(config, env={variable: key})

    assert held.structured_content is not None
    assert held.structured_content["status"] == "pending_approval"
    assert not again.is_error
    assert again.structured_content == {"result": "HI"}
    assert recorded(again)["run"] == run
    assert recorded(again)["entry"] != ask
    # A repeat within the retry window is a retry: the first answer, from the record, not made again.
    assert repeat.structured_content == {"result": "HI"}
    assert recorded(repeat)["run"] == run
    assert (recorded(repeat)["entry"], recorded(repeat)["replayed"]) == (recorded(again)["entry"], True)
    assert forwarded(tmp_path, run) == ["ok"]
    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    assert store.run(run).closed_at is None  # left open for its next caller, until idle


async def test_two_http_connections_share_a_run_and_one_waits_for_the_approval_of_the_others_ask(
    tmp_path: Path,
) -> None:
    config = configure(tmp_path, "max_wait_seconds = 60")
    process, port = start_http_recorder(config, tmp_path)
    events: list[str] = []
    waiting = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        events.append("progress")
        waiting.set()

    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert documented_entry("mcp-servers-http")["url"] == "http://127.0.0.1:8765/mcp"  # the defaults
        wait_listening(port, process, "the Recorder")
        async with Client(url) as first, Client(url) as second:
            held = await first.call_tool_mcp("plain_shout", {"text": "hi"})
            run, ask, key = recorded(held)["run"], recorded(held)["ask"], recorded(held)["runKey"]
            results: list[Any] = []

            async def wait_on_second() -> None:
                meta = {"hatp/runKey": key, "hatp/wait": 60}
                results.append(await second.call_tool_mcp("plain_shout", {"text": "hi"}, progress, meta=meta))
                events.append("result")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(wait_on_second)
                await until_set(waiting, "the held call's first progress notice")
                approve(config, run, ask)
            repeat = await first.call_tool_mcp("plain_shout", {"text": "hi"}, meta={"hatp/runKey": key})
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)

    [used] = results
    assert not used.is_error, errors.decode()[-2000:]
    assert used.structured_content == {"result": "HI"}
    assert recorded(used)["run"] == run
    assert events[0] == "progress"
    assert events[-1] == "result"
    assert repeat.structured_content == {"result": "HI"}  # a retry: the first answer again
    assert (recorded(repeat)["entry"], recorded(repeat)["replayed"]) == (recorded(used)["entry"], True)
    assert forwarded(tmp_path, run) == ["ok"]


async def test_a_run_opens_at_its_first_call_so_processes_that_make_none_leave_no_empty_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configure(tmp_path)
    entry = documented_entry("mcp-servers-stdio")
    args = [str(config) if arg.endswith("recorder.toml") else arg for arg in entry["args"]]
    idle = StdioTransport(
        str(Path(sys.executable).parent / entry["command"]),
        args,
        env=dict(os.environ),
        cwd=str(tmp_path),
        log_file=tmp_path / "recorder.log",
        keep_alive=False,
    )
    async with Client(idle, timeout=60) as agent:  # connects and lists the tools, calls nothing
        assert "plain_shout" in {tool.name for tool in await agent.list_tools()}
    held = await call_in_a_new_process(config)
    run, key = recorded(held)["run"], recorded(held)["runKey"]
    await call_in_a_new_process(config, meta={"hatp/runKey": key})  # continues the run: opens none

    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    try:
        runs = [r.id for r in store.runs()]
    finally:
        store.dispose()
    capsys.readouterr()
    ticked = recorder_cli(["--config", str(config), "tick"])

    assert runs == [run]
    assert ticked == 0
    assert "nothing in this run can be undone" not in capsys.readouterr().out
    assert "no call came: no run was opened" in (tmp_path / "recorder.log").read_text()


async def killed_at(config: Path, point: str, key: str) -> None:
    """The approved call made again in a new Recorder process that is killed at crash point ``point``."""
    crash = {"HATP_JOURNAL_TESTING": "1", "HATP_JOURNAL_CRASH_AT": point}
    with pytest.raises(MCPError):  # the Recorder's pipe closes: the call never gets an answer
        await call_in_a_new_process(config, meta={"hatp/runKey": key}, env=crash)


def listed_asks(config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``hatp-recorder asks`` shows the approver."""
    capsys.readouterr()
    assert recorder_cli(["--config", str(config), "asks"]) == 0
    return capsys.readouterr().out


async def test_an_approved_call_whose_recorder_died_before_sending_it_is_made_by_the_next_recorder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configure(tmp_path)
    held = await call_in_a_new_process(config)
    run, ask, key = recorded(held)["run"], recorded(held)["ask"], recorded(held)["runKey"]
    approve(config, run, ask)

    await killed_at(config, "gateway:claimed", key)
    shown = listed_asks(config, capsys)
    again = await call_in_a_new_process(config, meta={"hatp/runKey": key})

    ref = re.escape(f"{run}/{ask}")
    stopped = "approved: the Recorder making it stopped before sending it"
    assert re.search(rf"{ref} +plain\.shout +{stopped}", shown), shown
    assert not again.is_error, again.content
    assert again.structured_content == {"result": "HI"}
    assert forwarded(tmp_path, run) == ["ok"]
    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    [call] = [entry for entry in store.entries(run) if entry.kind == "call"]
    assert call.body["ask"] == ask  # made on the approval Lee gave, not on a new one
    assert [entry.id for entry in store.entries(run) if entry.kind == "ask"] == [ask]


async def test_an_approved_call_whose_recorder_died_after_sending_it_is_shown_in_doubt_and_never_sent_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configure(tmp_path)
    held = await call_in_a_new_process(config)
    run, ask, key = recorded(held)["run"], recorded(held)["ask"], recorded(held)["runKey"]
    approve(config, run, ask)

    await killed_at(config, "gateway:sent", key)
    before = listed_asks(config, capsys)
    told = await call_in_a_new_process(config, meta={"hatp/runKey": key})
    asked = await call_in_a_new_process(config, meta={"hatp/runKey": key})
    after = listed_asks(config, capsys)

    assert re.search(
        rf"{re.escape(f'{run}/{ask}')} +plain\.shout +approved: the Recorder making it sent it at ", before
    )
    assert "whether it was made is unknown (in doubt)" in before
    assert told.is_error
    assert recorded(told)["code"] == "CALL_IN_DOUBT"
    assert "whether it was made is unknown" in recorded(told)["message"]
    assert forwarded(tmp_path, run) == []  # never sent again
    store = RunStore(tmp_path / "recorder.db", SigningKey.from_file(tmp_path / "recorder.key"))
    [settled] = [entry for entry in store.entries(run) if entry.kind == "refused"]
    assert (settled.body["ask"], settled.body["code"]) == (ask, "CALL_IN_DOUBT")
    # The agent's next call is a new ask; its approver is shown what became of the first approval.
    assert asked.structured_content is not None
    new = asked.structured_content["ask"]
    assert new != ask
    [line] = [line for line in after.splitlines() if line.startswith(f"{run}/{new} ")]
    assert f"an earlier approval of this call ({run}/{ask}) is in doubt: the Recorder that was making" in line
