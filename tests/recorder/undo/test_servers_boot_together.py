"""Planning starts every tool server its checks need at once, rather than each after the one before
it has answered: on two cores a plan over three servers waited for three start-ups in a row."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from support.undo_org import CHAIN

from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.undo.planner import check_all
from hatp_journal.recorder.undo.servers import UndoServers
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.wire import CHECK_TOOL

pytestmark = pytest.mark.anyio


class FakeStep:
    """What ``check_all`` reads of a step: its id and its server."""

    def __init__(self, id: str, server: str) -> None:
        self.id, self.server = id, server


async def test_every_server_is_booted_once_in_step_order_before_the_first_check() -> None:
    steps: Any = [FakeStep("e3", "crm"), FakeStep("e2", "calendar"), FakeStep("e1", "crm")]
    happened: list[str] = []

    async def boot(names: list[str]) -> None:
        happened.append(f"boot {', '.join(names)}")

    async def check(step: Any) -> dict[str, Any]:
        happened.append(f"check {step.id}")
        return {"status": "ok"}

    answers = await check_all(steps, check, boot)

    assert happened[0] == "boot crm, calendar"
    assert sorted(happened[1:]) == ["check e1", "check e2", "check e3"]
    assert set(answers) == {"e1", "e2", "e3"}


async def test_nothing_is_booted_when_no_step_needs_a_check() -> None:
    booted: list[list[str]] = []

    async def boot(names: list[str]) -> None:
        booted.append(names)

    async def check(step: Any) -> dict[str, Any]:
        raise AssertionError("no step to check")

    assert await check_all([], check, boot) == {}
    assert booted == []


async def test_launched_servers_run_before_any_session_and_the_first_use_adopts_each(tmp_path: Path) -> None:
    def chain(name: str) -> dict[str, Any]:
        db, key = tmp_path / f"{name}.db", tmp_path / f"{name}.key"
        return {"command": sys.executable, "args": [str(CHAIN), "--db", str(db), "--key", str(key)]}

    servers = {"one": chain("one"), "two": chain("two"), "web": {"url": "http://127.0.0.1:9/mcp"}}
    config = RecorderConfig.model_validate({"recorder": {}, "servers": servers})
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    try:
        async with AsyncExitStack() as stack:
            undo = UndoServers(config, store, stack)

            await undo.launch(["one", "two", "web", "not-configured"])

            launched: dict[str, Any] = undo._launched  # what launch started
            assert sorted(launched) == ["one", "two"]  # a URL has no process; an unknown name, nothing
            processes = [launched[name]._link.process for name in ("one", "two")]
            assert all(process.returncode is None for process in processes)  # both run, no session yet
            first = launched["one"]
            connected = await undo._connected("one")  # a step's first use
            assert connected is first
            assert CHECK_TOOL in connected.tools
            assert undo._launched.keys() == {"two"}  # still waiting for its first use
    finally:
        store.dispose()
