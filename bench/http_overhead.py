"""What a tool call through the Recorder costs over streamable HTTP, with and without its data plane.

The same calls go, from one MCP client over streamable HTTP, interleaved in one run so that
machine noise hits every variant alike, to:

* ``direct``: the demo CRM served over HTTP (``hatp-crm serve --transport http``);
* ``recorder, library``: ``hatp-recorder serve --transport http`` with every request answered by
  the mcp library (the Recorder before its HTTP data plane: ``mcp.run_async(transport="http")``);
* ``recorder``: ``hatp-recorder serve --transport http`` as it ships, tool calls on its data plane
  (``recorder/front/http.py``).

Each Recorder fronts its own CRM over stdio and journals every call (SQLite, ``synchronous=FULL``).
Each iteration makes one read (``get_deal``) and one write (``update_deal``) on every variant, the
first variant rotating. Printed: median and p95 per call, what each adds over direct, the CPU time
each Recorder process spent per call, the load average.

Run: ``.venv/bin/python bench/http_overhead.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp
from fastmcp import Client

# Run as a script, this file's folder is on the path: the stdio bench's parts are shared, not copied.
from recorder_overhead import (
    KINDS,
    POLICY,
    QUIET,
    Variant,
    check_the_record,
    cpu_seconds,
    crm,
    median,
    p95,
    run_calls,
)

SERVE = "from hatp_journal.recorder.cli.command_line import main; raise SystemExit(main())"
SERVE_BY_LIBRARY = (
    "import hatp_journal.recorder.front.http as front_http; "
    "front_http.serve_http = lambda recorder, mcp, host, port: "
    "mcp.run_async(transport='http', host=host, port=port, show_banner=False); " + SERVE
)
"""The Recorder with its HTTP data plane taken out: every request through the mcp library."""


class Agent:
    """The mcp library's own client, with the one method of FastMCP's that :class:`Variant` calls."""

    def __init__(self, url: str) -> None:
        self.client = mcp.Client(url)

    async def __aenter__(self) -> Agent:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)

    async def call_tool_mcp(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool(name, arguments)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def start(command: list[str], workdir: Path, what: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server listening on a free port (``--port`` appended); its process and MCP URL once up."""
    port = free_port()
    process = subprocess.Popen(
        [*command, "--transport", "http", "--port", str(port)],
        cwd=workdir,
        env={**os.environ, **QUIET},
        stdout=subprocess.DEVNULL,
        stderr=(workdir / f"{what}.log").open("wb"),
    )
    while not listening(port):
        if process.poll() is not None:
            raise SystemExit(f"{what} ended before it listened: see {workdir / what}.log")
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/mcp"


def recorder(workdir: Path, name: str, code: str) -> list[str]:
    """``hatp-recorder serve`` (run by ``code``) with its own config, store, key and CRM over stdio."""
    server = crm(workdir, name + "-crm")
    (workdir / "policy.json").write_text(json.dumps(POLICY))
    config = workdir / f"{name}.toml"
    config.write_text(
        "[recorder]\n"
        f'store = "{name}.db"\nkey = "{name}.key"\npolicy = "policy.json"\n'
        'agent = "bench"\nprincipal = "human://acme.com/bench"\n\n'
        "[servers.crm]\n"
        f"command = {json.dumps(server[0])}\nargs = {json.dumps(server[1:])}\n"
        'env = { FASTMCP_LOG_LEVEL = "WARNING" }\n'
    )
    return [sys.executable, "-c", code, "--config", str(config), "serve"]


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="measured calls per kind and variant")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--client",
        choices=("mcp", "fastmcp"),
        default="mcp",
        help="the agent: the mcp library's Client, or FastMCP's (which asks for progress and logs on every "
        "call, so the mcp library answers it either way)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="http-overhead-") as folder:
        workdir = Path(folder)
        servers = {
            "direct": crm(workdir, "direct"),
            "recorder, library": recorder(workdir, "library", SERVE_BY_LIBRARY),
            "recorder": recorder(workdir, "recorder", SERVE),
        }
        processes: dict[str, subprocess.Popen[bytes]] = {}
        variants: list[Variant] = []
        try:
            async with AsyncExitStack() as stack:
                for name, command in servers.items():
                    processes[name], url = start(command, workdir, name.replace(", ", "-"))
                    connect = Agent(url) if args.client == "mcp" else Client(url, timeout=120)
                    agent = await stack.enter_async_context(connect)
                    variants.append(Variant(name, agent, "" if name == "direct" else "crm_"))
                await run_calls(variants, 0, args.warmup)
                before = {name: cpu_seconds(process.pid) for name, process in processes.items()}
                await run_calls(variants, args.calls, 0)
                for variant in variants:
                    spent = cpu_seconds(processes[variant.name].pid) - before[variant.name]
                    variant.cpu_ms = spent * 1000 / (args.calls * len(KINDS))
        finally:
            for process in processes.values():
                process.send_signal(signal.SIGTERM)
            for process in processes.values():
                process.wait(timeout=60)
        checks = [
            check_the_record(workdir / f"{name}.db", workdir / f"{name}.key", (args.warmup + args.calls) * 2)
            for name in ("library", "recorder")
        ]
        print(report(variants, args, checks))


def report(variants: list[Variant], args: Any, checks: list[str]) -> str:
    lines = [
        f"Recorder over HTTP — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.calls} calls per kind and "
        f"variant (+{args.warmup} warm-up), interleaved, {args.client}'s client over streamable HTTP",
        f"{platform.python_implementation()} {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        f"{'ms per call':<19}{'read median':>12}{'p95':>8}{'added':>8}"
        f"{'write median':>15}{'p95':>8}{'added':>8}{'CPU':>7}",
    ]
    direct = variants[0].samples
    for variant in variants:
        cells = []
        for kind in KINDS:
            samples = variant.samples[kind]
            added = median(samples) - median(direct[kind])
            width = 12 if kind == "read" else 15
            cells.append(f"{median(samples):>{width}.2f}{p95(samples):>8.2f}{added:>+8.2f}")
        cpu = f"{variant.cpu_ms:>7.2f}" if variant.cpu_ms is not None else f"{'':>7}"
        lines.append(f"{variant.name:<19}{''.join(cells)}{cpu}")
    lines += [
        "(CPU: ms of CPU time the server's own process spent per call, reads and writes alike;",
        " each Recorder's CRM is its child over stdio, its CPU not counted)",
        "",
        *(f"record: {check}" for check in checks),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    asyncio.run(main())
