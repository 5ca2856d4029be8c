"""`hatp-recorder serve` spawns its stdio servers first; each is taken over by its Downstream, or ended."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from hatp_journal.recorder.cli.boot import spawn_stdio_servers
from hatp_journal.recorder.config import RecorderConfig, ServerConfig
from hatp_journal.recorder.gateway.downstream import Downstream

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


# A stand-in server that notes which of the SQLAlchemy and mcp libraries its parent, the Recorder,
# has loaded when it starts (the kernel's map of the parent's memory), then exits at once.
NOTES_THE_PARENT = """
import os, sys
maps = open(f"/proc/{os.getppid()}/maps").read()
loaded = sorted(name for name in ("sqlalchemy", "mcp_types", "fastmcp") if f"/{name}/" in maps)
open(sys.argv[1], "w").write(" ".join(loaded) or "none")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the parent's map in /proc")
def test_serve_spawns_its_servers_before_it_loads_the_store_and_the_mcp_libraries(tmp_path: Path) -> None:
    noted = tmp_path / "noted.txt"
    (tmp_path / "policy.json").write_text('{"autonomy": {"unknown": "allow"}}', encoding="utf-8")
    (tmp_path / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\npolicy = "policy.json"\n'
        f"[servers.early]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(['-c', NOTES_THE_PARENT, str(noted)])}\n",
        encoding="utf-8",
    )
    served = subprocess.run(
        [sys.executable, "-m", "hatp_journal.recorder.cli.command_line", "serve"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )

    assert noted.read_text() == "none"
    # The stand-in answered nothing: the Recorder says so and stops, as for any broken server.
    assert (served.returncode, served.stderr.split(": ")[1]) == (2, "DOWNSTREAM_FAILED"), served.stderr
