"""What being an MCP hop costs, before any journaling: the floor under the Recorder's overhead.

The example deals server (``tests/toolkit/example_server.py``) is reached three ways over stdio,
interleaved in one run (the path that goes first alternates):

* ``direct``: an MCP client talks to the server;
* ``low-level proxy``: the client talks to ``bench/lowlevel_proxy.py`` (``mcp.server.lowlevel``
  forwarding to one kept-open session), the thinnest proxy the mcp library allows;
* ``FastMCP proxy``: the client talks to ``bench/plain_proxy.py`` (FastMCP's ``create_proxy``).

It prints the median and p95 per read call (``get_deal``) and what each proxy adds to ``direct``,
with the ratio. Run: ``.venv/bin/python bench/mcp_hop.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BENCH = Path(__file__).resolve().parent
EXAMPLE = BENCH.parent / "tests" / "toolkit" / "example_server.py"


async def connect(stack: AsyncExitStack, argv: list[str]) -> ClientSession:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def measure(calls: int, warmup: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hatp-bench-hop-") as folder:

        def server(name: str) -> list[str]:
            return [
                sys.executable,
                str(EXAMPLE),
                "--db",
                f"{folder}/{name}.db",
                "--key",
                f"{folder}/{name}.key",
            ]

        paths = {
            "direct": server("direct"),
            "low-level proxy": [sys.executable, str(BENCH / "lowlevel_proxy.py"), *server("low")],
            "FastMCP proxy": [sys.executable, str(BENCH / "plain_proxy.py"), *server("fast")],
        }
        async with AsyncExitStack() as stack:
            sessions = {name: await connect(stack, argv) for name, argv in paths.items()}
            times: dict[str, list[float]] = {name: [] for name in sessions}
            order = list(sessions)
            for i in range(warmup + calls):
                for name in order if i % 2 else reversed(order):
                    started = time.perf_counter()
                    result = await sessions[name].call_tool("get_deal", {"deal_id": "D-881"})
                    elapsed = (time.perf_counter() - started) * 1000
                    if result.is_error:
                        raise SystemExit(f"{name}: get_deal failed: {result.content}")
                    if i >= warmup:
                        times[name].append(elapsed)
    print(f"MCP hop — {calls} read calls per path (+{warmup} warm-up), interleaved; load {os.getloadavg()}")
    print(f"{'ms per call':24s}{'median':>10s}{'p95':>10s}")
    for name, samples in times.items():
        p95 = sorted(samples)[int(len(samples) * 0.95)]
        print(f"{name:24s}{statistics.median(samples):10.2f}{p95:10.2f}")
    direct = statistics.median(times["direct"])
    for name in ("low-level proxy", "FastMCP proxy"):
        added = statistics.median(times[name]) - direct
        print(f"{name} adds {added:+.2f} ms per read (ratio {statistics.median(times[name]) / direct:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    anyio.run(measure, args.calls, args.warmup)


if __name__ == "__main__":
    main()
