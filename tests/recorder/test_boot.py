"""`hatp-recorder serve` spawns its stdio servers first; each is taken over by its Downstream, or ended."""

from __future__ import annotations

import signal
import sys
from contextlib import AsyncExitStack

import pytest

from hatp_journal.recorder.boot import spawn_stdio_servers
from hatp_journal.recorder.config import RecorderConfig, ServerConfig
from hatp_journal.recorder.downstream import Downstream

pytestmark = pytest.mark.anyio

# A stand-in server process: it runs until its stdin closes (as a stdio server does).
WAITS_FOR_STDIN = ServerConfig(command=sys.executable, args=["-c", "import sys; sys.stdin.buffer.read()"])


async def test_a_server_spawned_early_is_the_process_its_downstream_talks_to() -> None:
    config = RecorderConfig(servers={"crm": WAITS_FOR_STDIN, "web": ServerConfig(url="http://127.0.0.1:9/")})
    downstream = Downstream("crm", config.servers["crm"])

    async with AsyncExitStack() as stack:
        spawned = await spawn_stdio_servers(config, stack)
        await downstream.launch(stack, spawned["crm"])

        assert list(spawned) == ["crm"]  # a server reached by URL is not spawned
        assert downstream._link is not None
        assert downstream._link.process is spawned["crm"]

    assert spawned["crm"].returncode == 0  # its link closed its stdin: it ended by itself


async def test_a_server_spawned_early_and_never_taken_over_is_ended() -> None:
    config = RecorderConfig(servers={"crm": WAITS_FOR_STDIN})

    async with AsyncExitStack() as stack:
        spawned = await spawn_stdio_servers(config, stack)

    assert spawned["crm"].returncode == -signal.SIGTERM


async def test_a_server_that_cannot_be_spawned_is_left_to_its_downstream_to_report() -> None:
    config = RecorderConfig(servers={"crm": ServerConfig(command="/nonexistent/hatp-crm")})

    async with AsyncExitStack() as stack:
        spawned = await spawn_stdio_servers(config, stack)

    assert spawned == {}
