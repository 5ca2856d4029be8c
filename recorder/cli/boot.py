"""Start ``hatp-recorder serve``'s stdio tool servers first, before the Recorder loads its own parts.

Each server is a Python process that spends a second or more importing the MCP libraries; so does
the Recorder. Spawned here, before the Recorder imports its gateway, the servers boot while it does
(on two CPUs, the Recorder and the servers share both instead of the servers waiting for it). This
module imports only anyio: spawning must not wait for the MCP stack.

Nothing changes but the time: each process is spawned as the mcp library's stdio client spawns it
(its own session, stderr to ours), and the Recorder still opens each session, lists the tools and
pins the keys before it forwards any call (``recorder/gateway/downstream.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio

from hatp_journal.recorder.config import RecorderConfig

STOP_SECONDS = 5.0
"""How long a server spawned here and never taken over is given to end, after SIGTERM, then SIGKILL."""


async def spawn_stdio_servers(config: RecorderConfig, stack: AsyncExitStack) -> dict[str, Any]:
    """Spawn every stdio server ``config`` names, by server name; each is stopped when ``stack``
    closes, if the link that takes it over has not stopped it already.

    A server that can't be spawned is left out: its :class:`Downstream` tries again and reports it
    (``DOWNSTREAM_FAILED``). Nothing is spawned early on Windows, where the mcp library puts each
    server in a job object of its own.
    """
    if sys.platform == "win32":  # pragma: no cover - the servers are started as before
        return {}
    spawned: dict[str, Any] = {}
    stack.push_async_callback(_stop_all, spawned)
    for name, server in config.servers.items():
        if server.command is None:
            continue
        try:
            spawned[name] = await anyio.open_process(
                [server.command, *server.args],
                env={**os.environ, **server.env},
                stderr=sys.stderr,
                cwd=server.cwd,
                start_new_session=True,
            )
        except (OSError, ValueError):
            continue  # said with its reason by the Downstream, which spawns it again
    return spawned


async def _stop_all(spawned: dict[str, Any]) -> None:
    """End what still runs: a server the Recorder failed before taking over (a bad policy or store).

    It was never spoken to, so it is ended at once, with whatever it started (its process group).
    """
    with anyio.CancelScope(shield=True):
        for process in spawned.values():
            if process.returncode is not None:
                continue
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                with anyio.move_on_after(STOP_SECONDS):
                    await process.wait()
                if process.returncode is not None:
                    break
