"""``hatp-recorder serve``, started so that its tool servers boot while the Recorder loads.

Each stdio tool server is a Python process that spends a second or more importing the MCP
libraries; so does the Recorder. This module imports only the config and anyio, spawns the servers
(``recorder/cli/boot.py``), and only then imports the store, the policy, the gateway and the MCP stack
(``recorder/cli/commands.py``), while the servers import theirs. Nothing else changes: the Recorder
still opens each server's session, lists its tools and pins its keys before it forwards a call.
"""

from __future__ import annotations

import argparse
import os
from contextlib import AsyncExitStack

import anyio

from hatp_journal._shared.extras import require_extra
from hatp_journal.recorder import tracing
from hatp_journal.recorder.cli.boot import spawn_stdio_servers
from hatp_journal.recorder.config import (
    RUN_KEY_ENV,
    ConfigError,
    RecorderConfig,
    load_config,
    missing_commands,
    with_run_key,
)


def serve(args: argparse.Namespace) -> int:
    """Run ``serve``; 2 for bad input (a config, policy, store or key, a tool server that won't do)."""
    try:
        config = load_config(args.config)
        tracing.configure(config.recorder.tracing)
        unfound = missing_commands(config, args.config)
        if unfound:
            raise ConfigError("\n".join(unfound))
        require_extra("serve")  # before any server is spawned, not once they run
        config = with_run_key(config, args.run_key or os.environ.get(RUN_KEY_ENV))
        anyio.run(_spawn_then_serve, config, args)
    except Exception as error:
        from hatp_journal.recorder.cli.bad_input import (
            said_as_bad_input,
        )  # lazy: only on failure: start-up speed

        if not said_as_bad_input(error):
            raise
        return 2
    return 0


async def _spawn_then_serve(config: RecorderConfig, args: argparse.Namespace) -> None:
    async with AsyncExitStack() as stack:
        spawned = await spawn_stdio_servers(config, stack)
        from hatp_journal.recorder.cli.commands import serve_spawned  # lazy: loads while the servers boot

        await serve_spawned(config, args.transport, args.host, args.port, stack, spawned)
