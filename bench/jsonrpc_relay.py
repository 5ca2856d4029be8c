"""The floor under any JSON-RPC-level gateway: a stdio relay that journals nothing.

``jsonrpc_relay.py COMMAND [ARG ...]`` starts ``COMMAND`` as a stdio MCP server and relays
newline-delimited JSON-RPC between its own stdin/stdout and the server's, in both directions. Each
message is parsed once (as a gateway must, to see what it is) and forwarded as the bytes received.
No MCP library, no validation, no journaling: ``recorder_overhead.py`` measures what such a hop
costs, against which the Recorder's data plane is judged. ``HATP_RELAY_LOG=FILE`` also writes
every message to FILE, prefixed ``>`` (to the server) or ``<`` (from it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import IO

LINE_LIMIT = 64 * 1024 * 1024


async def pump(
    reader: asyncio.StreamReader, write: asyncio.StreamWriter | IO[bytes], log: IO[bytes] | None, mark: bytes
) -> None:
    """Forward each line from ``reader`` to ``write``, parsing it once on the way."""
    while line := await reader.readline():
        json.loads(line)  # what a gateway pays to look at a message
        if log is not None:
            log.write(mark + line)
            log.flush()
        if isinstance(write, asyncio.StreamWriter):
            write.write(line)
            await write.drain()
        else:
            write.write(line)
            write.flush()


async def relay(command: str, args: list[str]) -> None:
    """Relay between this process's stdio and the server's until either side closes."""
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT
    )
    assert child.stdin is not None
    assert child.stdout is not None
    stdin = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    out = os.fdopen(sys.stdout.fileno(), "wb", buffering=0, closefd=False)
    path = os.environ.get("HATP_RELAY_LOG")
    log = open(path, "ab") if path else None  # noqa: SIM115 - kept open for the relay's life
    down = asyncio.create_task(pump(stdin, child.stdin, log, b"> "))
    up = asyncio.create_task(pump(child.stdout, out, log, b"< "))
    await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
    child.stdin.close()
    await child.wait()


def main() -> None:
    """Relay to the server command given on the command line."""
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    asyncio.run(relay(sys.argv[1], sys.argv[2:]))


if __name__ == "__main__":
    main()
