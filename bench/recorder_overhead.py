"""What the Recorder adds to a tool call, beside every other way to put a hop in front of a server.

The same calls go to the demo CRM (``hatp-crm serve``, each variant its own process and
database) from an MCP client over stdio, interleaved in one run so that machine noise hits every
variant alike:

* ``direct``: the client talks to the server;
* ``relay``: through ``bench/jsonrpc_relay.py``, a stdio JSON-RPC relay that parses each message
  once and journals nothing (the floor under any gateway written in Python);
* ``fastmcp proxy``: through ``bench/plain_proxy.py``, FastMCP's ``create_proxy`` over one
  kept-open session (no journaling);
* ``unwind``: through unwind-mcp's proxy (``bench/unwind_serve.py``: ``unwind serve`` with a
  configuration the bench writes), when its ``unwind`` command is on the ``PATH`` or given with
  ``--unwind``; it logs every call in its own SQLite event database (a hash chain, unsigned);
* ``recorder``: through ``hatp-recorder serve``, which forwards, checks the receipt, journals every
  call in a signed Run Record (SQLite, WAL, ``synchronous=FULL``) and strips the token.

Every variant runs in both protocol eras side by side (``--eras``): the 2026 one, and the handshake
one (``initialize`` first, 2025-11-25), named ``…, hs``, each with its own process and CRM and compared
with the direct client of its era. Two more speak the handshake era through the mcp SDK's own
``ClientSession`` (what most hosts use) rather than FastMCP's client: ``direct, SDK`` and
``recorder, SDK``. unwind-mcp speaks the handshake era only.

Each iteration makes one read (``get_deal``) and one write (``update_deal``, alternating two
stages so that every write changes the deal) on every variant, the first variant rotating.
Printed: median and p95 per call, what each variant adds over direct, the Recorder's targets,
the load average. Then appends: ``--agents`` concurrent agents appending to one Run Record
store through ``RunStore.append_async`` (entries per second, and a check that no run forked).

Run: ``.venv/bin/python bench/recorder_overhead.py [--calls N]`` or ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

BENCH = Path(__file__).resolve().parent
RELAY = BENCH / "jsonrpc_relay.py"
PLAIN_PROXY = BENCH / "plain_proxy.py"
UNWIND_SERVE = BENCH / "unwind_serve.py"
MEMORY_DISK = Path("/dev/shm")
"""Where the second Recorder keeps its store: fsync costs nothing there (Linux tmpfs)."""
SERVE_RECORDER = "from hatp_journal.recorder.cli.command_line import main; raise SystemExit(main())"
PROFILE_RECORDER = (
    "import cProfile, os, signal, sys; from hatp_journal.recorder.cli.command_line import main; "
    "stats = sys.argv.pop(1); profile = cProfile.Profile(); "
    "signal.signal(signal.SIGUSR1, lambda *_: profile.enable()); "
    "signal.signal(signal.SIGUSR2, lambda *_: (profile.disable(), profile.dump_stats(stats + '.part'), "
    "os.replace(stats + '.part', stats))); "
    "main(sys.argv[1:])"
)
"""The Recorder under cProfile: SIGUSR1 starts it, SIGUSR2 stops it and writes the stats (so that only
the measured calls count, and the stats are written before the client ends the process)."""

TARGET_MS = {"read": 1.0, "write": 1.5}
"""Issue 14: the Recorder adds at most this much over direct to the median call, over stdio."""
TARGET_APPENDS = 2_000
"""Issue 14: appends per second with several agents on one store."""

POLICY = {
    "autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask"},
    "undoAuthority": "human://acme.com/role/team-lead",
}
DEAL = "D-881"
STAGES = ("Won", "Proposal")
KINDS = ("read", "write")
QUIET = {"FASTMCP_LOG_LEVEL": "WARNING"}
"""For every process alike: no start-up banner lines in the figures."""

UNWIND_CONFIG = {
    "sensor_tools": ["get_deal"],
    "state_modifying_tools": ["update_deal"],
    "circuit_breaker_max_calls": 1_000_000,
    "unknown_tool_policy": "show",
}
"""unwind-mcp's settings for the CRM (added to its defaults): ``get_deal`` a read (its only class of
reads is "sensor"), ``update_deal`` a write (snapshots and the circuit breaker; not a high-risk
actuator, so a read before it does not hold it), the breaker raised from 5 writes in 5 s so that the
bench's writes pass, and the CRM's tools shown in ``tools/list`` (it hides tools it does not know)."""


@dataclass
class Variant:
    """One way of reaching the server, and what its calls cost."""

    name: str
    client: Any
    """FastMCP's ``Client`` or an :class:`SdkClient`."""
    prefix: str = ""
    protocol: str = ""
    """The MCP protocol version the client and the variant agreed on."""
    base: str = "direct"
    """The variant it is compared with: the direct one that speaks its protocol."""
    writes: int = 0
    cpu_ms: float | None = None
    """CPU time the gateway's own process spent per call, if it has one."""
    samples: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    async def call(self, kind: str, *, keep: bool) -> None:
        """Make one call of ``kind`` and, if ``keep``, record its wall time in ms."""
        if kind == "read":
            name, arguments = "get_deal", {"deal_id": DEAL}
        else:
            name, arguments = "update_deal", {"deal_id": DEAL, "stage": STAGES[self.writes % 2]}
            self.writes += 1
        start = time.perf_counter_ns()
        result = await self.client.call_tool_mcp(self.prefix + name, arguments)
        elapsed = (time.perf_counter_ns() - start) / 1e6
        # What the server answered must reach the client (unwind-mcp passes it as the repr of the
        # content list, quotes kept): the deal, and after a write its new stage.
        text = "".join(getattr(block, "text", "") for block in result.content)
        expected = f'"stage":"{arguments["stage"]}"' if "stage" in arguments else f'"id":"{DEAL}"'
        if result.is_error or expected not in text:
            raise SystemExit(f"{self.name} {name} did not go through: {result.content}")
        if keep:
            self.samples[kind].append(elapsed)


class SdkClient:
    """The mcp SDK's ``ClientSession`` over stdio (it negotiates the handshake era on ``initialize``),
    with the two members the bench uses of FastMCP's client."""

    def __init__(self, command: list[str], workdir: Path) -> None:
        env = {**os.environ, **QUIET}
        self.server = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(workdir))
        self.session: ClientSession | None = None
        self.protocol_version: str | None = None
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> SdkClient:
        read, write = await self._stack.enter_async_context(stdio_client(self.server, errlog=sys.stderr))
        self.session = await self._stack.enter_async_context(ClientSession(read, write))
        opened = await self.session.initialize()
        self.protocol_version = str(opened.protocol_version)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call_tool_mcp(self, name: str, arguments: dict[str, Any]) -> Any:
        assert self.session is not None
        return await self.session.call_tool(name, arguments)


def crm(workdir: Path, name: str) -> list[str]:
    """The command line of a CRM server with its own database and key."""
    return [
        sys.executable,
        "-m",
        "hatp_journal.servers.crm.cli",
        "serve",
        "--db",
        str(workdir / f"{name}.db"),
    ]


def client(command: list[str], workdir: Path, *, legacy: bool = False) -> Client[Any]:
    """An MCP client over stdio to ``command``; ``legacy``: the handshake-era protocol (``initialize``
    first) instead of the newest the server offers."""
    # UNWIND_HOME: unwind-mcp's event database in the bench's folder, not the user's ~/.unwind.
    env = {**os.environ, **QUIET, "UNWIND_HOME": str(workdir / "unwind-home")}
    transport = StdioTransport(command[0], command[1:], env=env, cwd=str(workdir))
    return Client(transport, timeout=120, mode="legacy" if legacy else "auto")


HTTP_VARIANTS = (
    "direct",
    "fastmcp proxy",
    "recorder",
    "recorder, tmpfs",
    "baseline, tmpfs",
    "recorder, traced",
)
"""The variants that can be reached over streamable HTTP, in either era (the relay, unwind-mcp and the
SDK's stdio client serve stdio only)."""

HANDSHAKE = ", hs"
"""How a variant's name says it speaks the handshake era."""


async def http_client(
    stack: AsyncExitStack, name: str, command: list[str], workdir: Path, *, legacy: bool = False
) -> Client[Any]:
    """Start ``command`` serving streamable HTTP on a free port (stopped when ``stack`` closes) and
    return a client to it, once it listens (``legacy``: as in ``client``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, **QUIET}
    if name == "fastmcp proxy":
        env["PLAIN_PROXY_HTTP_PORT"] = str(port)
    elif name == "direct":
        command = [*command, "--transport", "http", "--port", str(port)]
    else:  # a Recorder: one run for the client's requests, whatever the protocol's sessions
        command = [*command, "--transport", "http", "--port", str(port), "--run-key", "bench-run"]
    process = await asyncio.create_subprocess_exec(*command, env=env, cwd=workdir)

    async def stop() -> None:
        if process.returncode is None:
            process.terminate()  # a Recorder closes its run on SIGTERM
        await process.wait()

    stack.push_async_callback(stop)
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if process.returncode is not None:
                raise SystemExit(f"{name} ended before it listened on port {port}") from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            break
    transport = StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")
    return Client(transport, timeout=120, mode="legacy" if legacy else "auto")


def recorder_command(
    workdir: Path,
    name: str,
    store: Path | str,
    profile: Path | None = None,
    crm_name: str | None = None,
    tracing: bool = False,
) -> list[str]:
    """``hatp-recorder serve`` with its own config, ``store`` (a path or URL) and CRM (under cProfile
    if asked); Recorders given one ``crm_name`` front replicas of one CRM (one database, one key).
    ``tracing``: OpenTelemetry spans on, exported by the SDK's console exporter to the Recorder's
    stderr, which goes to ``<name>.spans`` in the work directory: a span's full cost, serialising
    included, without the spans filling the bench's output."""
    server = crm(workdir, crm_name or name)
    (workdir / "policy.json").write_text(json.dumps(POLICY))
    config = workdir / f"{name}.toml"
    config.write_text(
        "[recorder]\n"
        f'store = {json.dumps(str(store))}\nkey = {json.dumps(name + ".key")}\npolicy = "policy.json"\n'
        'agent = "bench"\nprincipal = "human://acme.com/bench"\n'
        + ("tracing = true\n" if tracing else "")
        + "\n"
        "[servers.crm]\n"
        f"command = {json.dumps(server[0])}\nargs = {json.dumps(server[1:])}\n"
        f'env = {{ FASTMCP_LOG_LEVEL = "WARNING" }}\n'
    )
    code = [PROFILE_RECORDER, str(profile)] if profile is not None else [SERVE_RECORDER]
    spans = str(workdir / f"{name}.spans")
    traced = ["sh", "-c", 'exec env OTEL_TRACES_EXPORTER=console "$@" 2>>"$0"', spans] if tracing else []
    return [*traced, sys.executable, "-c", *code, "--config", str(config), "serve"]


def children() -> dict[int, str]:
    """This process's children: pid -> command line (Linux ``/proc``)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found[int(stat.parent.name)] = cmdline
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


NOTES = {
    "recorder, tmpfs": "the same Recorder with its store on tmpfs, where an fsync costs nothing",
    "baseline, tmpfs": "--baseline's Recorder, on tmpfs too",
    "direct, hs": "direct on the handshake era (unwind-mcp's), which every ', hs' variant and unwind "
    "are taken over",
    "recorder, SDK": "the mcp SDK's ClientSession (handshake era) to the Recorder, taken over 'direct, SDK'",
}
"""What the report says under its table about the variants that ran."""


def median(values: Sequence[float]) -> float:
    """The median."""
    return statistics.median(values)


def p95(values: Sequence[float]) -> float:
    """The 95th percentile (inclusive method)."""
    return statistics.quantiles(values, n=20, method="inclusive")[18]


async def run_calls(variants: list[Variant], calls: int, warmup: int) -> None:
    """Warm up, then ``calls`` iterations of one read and one write per variant, rotating the order."""
    for iteration in range(warmup + calls):
        order = variants[iteration % len(variants) :] + variants[: iteration % len(variants)]
        for kind in KINDS:
            for variant in order:
                await variant.call(kind, keep=iteration >= warmup)


def check_the_record(store_path: Path, key: Path, calls: int) -> str:
    """The Recorder really journaled every call: allowed, writes verified."""
    store = RunStore(store_path, SigningKey.from_file(key))
    try:
        (run,) = store.runs()
        entries = store.entries(run.id)
    finally:
        store.dispose()
    decisions = {entry.body.get("decision", {}).get("action") for entry in entries}
    writes = [entry for entry in entries if entry.body.get("tool") == "update_deal"]
    verified = sum(entry.body.get("intake", {}).get("status") == "verified" for entry in writes)
    if len(entries) != calls or decisions != {"allow"} or verified != len(writes):
        raise SystemExit(
            f"the Run Record is not what the bench expects: {len(entries)} entries (want {calls}), "
            f"decisions {decisions}, {verified}/{len(writes)} writes verified"
        )
    return f"{len(entries)} entries, every call allowed, {verified} writes with verified receipts"


def unwind_command(unwind: str, workdir: Path) -> list[str]:
    """unwind-mcp's proxy in front of its own CRM, with the bench's settings, under the Python of
    its ``unwind`` script (the one that has unwind-mcp installed)."""
    shebang = Path(unwind).read_text(errors="replace").partition("\n")[0]
    if not shebang.startswith("#!") or "python" not in shebang:
        raise SystemExit(f"{unwind} is not a Python script: cannot find the Python that has unwind-mcp")
    config = workdir / "unwind.json"
    config.write_text(json.dumps(UNWIND_CONFIG))
    return [*shebang[2:].split(), str(UNWIND_SERVE), str(config), *crm(workdir, "unwound")]


def check_unwinds_log(workdir: Path, calls: int) -> str:
    """unwind-mcp really logged every call, and let each through to the server."""
    database = sqlite3.connect(workdir / "unwind-home" / "events.db")
    try:
        rows = database.execute("SELECT tool, status FROM events").fetchall()
    finally:
        database.close()
    statuses = {status for _, status in rows}
    writes = sum(tool == "update_deal" for tool, _ in rows)
    if len(rows) != calls or statuses != {"success"}:
        raise SystemExit(
            f"unwind-mcp's event log is not what the bench expects: {len(rows)} events (want {calls}), "
            f"statuses {statuses}"
        )
    return f"{len(rows)} events, every call a success, {writes} writes"


# -- appends from concurrent agents ----------------------------------------------------------------

BODY = {
    "agent": "bench",
    "principal": "human://acme.com/bench",
    "server": "crm",
    "tool": "update_deal",
    "arguments": {"deal_id": DEAL, "stage": "Won"},
    "argumentsDigest": "sha256:" + "0" * 64,
    "declared": "compensate",
    "decision": {"action": "allow", "reasons": []},
    "intake": {"status": "verified", "kind": "compensate"},
    "journal": {"protocol": "hatp-journal/0.3", "effect": {"resource": "crm://deals/D-881", "version": "v2"}},
    "outcome": {"status": "ok"},
    "links": [],
}
"""An entry shaped like a recorded write (its size is what matters here)."""


async def appends(workdir: Path, agents: int, each: int) -> tuple[float, str]:
    """``agents`` tasks append ``each`` entries to their own runs on one store; entries per second."""
    store = RunStore(workdir / "appends.db", SigningKey.generate())
    runs = [store.open_run(agent=f"agent-{n}", principal="human://acme.com/bench").id for n in range(agents)]

    async def agent(run: str) -> None:
        for _ in range(each):
            await store.append_async(run, "call", BODY)

    start = time.perf_counter()
    await asyncio.gather(*(agent(run) for run in runs))
    elapsed = time.perf_counter() - start
    forks = 0
    for run in runs:
        entries = store.entries(run)
        heads = [entry.prev_hash for entry in entries]
        forks += len(heads) - len(set(heads)) + (len(entries) != each)
        forks += sum(later.prev_hash != earlier.hash for earlier, later in pairwise(entries))
    store.dispose()
    return agents * each / elapsed, f"{forks} forks"


def durable_costs(workdir: Path, samples: int) -> dict[str, list[float]]:
    """A bare fsync and a Run Record append (``synchronous=FULL``, as the Recorder's), interleaved, in ms."""
    store = RunStore(workdir / "durable.db", SigningKey.generate())
    run = store.open_run(agent="bench", principal="human://acme.com/bench").id
    fd = os.open(workdir / "fsync.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def fsync() -> None:
        os.write(fd, b"x" * 200)
        os.fsync(fd)

    actions = {
        "fsync of a 200-byte append": fsync,
        "Run Record append": lambda: store.append(run, "call", BODY),
    }
    times: dict[str, list[float]] = {label: [] for label in actions}
    try:
        for _ in range(samples):
            for label, action in actions.items():
                start = time.perf_counter_ns()
                action()
                times[label].append((time.perf_counter_ns() - start) / 1e6)
    finally:
        os.close(fd)
        store.dispose()
    return times


# -- report ---------------------------------------------------------------------------------------


def report(
    variants: list[Variant],
    args: Any,
    checks: list[str],
    appended: tuple[float, str],
    durable: dict[str, list[float]],
) -> str:
    """The figures as printed."""
    over = "streamable HTTP" if args.transport == "http" else "stdio"
    lines = [
        f"Recorder overhead — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.calls} calls per kind and "
        f"variant (+{args.warmup} warm-up), interleaved, every variant over {over} to its own hatp-crm",
        f"{platform.python_implementation()} {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"MCP protocol: {protocols(variants)}",
        "",
        f"{'ms per call':<22}{'read median':>12}{'p95':>8}{'added':>8}"
        f"{'write median':>15}{'p95':>8}{'added':>8}{'CPU':>7}",
    ]
    bases = {variant.name: variant.samples for variant in variants}
    for variant in variants:
        cells = []
        for kind in KINDS:
            samples = variant.samples[kind]
            added = median(samples) - median(bases[variant.base][kind])
            cells.append(
                f"{median(samples):>{12 if kind == 'read' else 15}.2f}{p95(samples):>8.2f}{added:>+8.2f}"
            )
        cpu = f"{variant.cpu_ms:>7.2f}" if variant.cpu_ms is not None else f"{'':>7}"
        lines.append(f"{variant.name:<22}{''.join(cells)}{cpu}")
    lines += []
    notes = ["CPU: ms of CPU time the gateway's own process spent per call, reads and writes alike"]
    for name, note in NOTES.items():
        if name in bases:
            notes.append(f"'{name}': {note}")
    lines += ["(" + ";\n ".join(notes) + ")", ""]
    for variant in (v for v in variants if v.name.startswith("recorder")):
        direct = bases[variant.base]
        for kind in KINDS:
            added = median(variant.samples[kind]) - median(direct[kind])
            verdict = "met" if added <= TARGET_MS[kind] else f"NOT met, by {added - TARGET_MS[kind]:.2f} ms"
            lines.append(
                f"{variant.name + ' ' + kind + ':':<29} adds {added:+.2f} ms (median), "
                f"{p95(variant.samples[kind]) - p95(direct[kind]):+.2f} ms (p95); "
                f"target <= {TARGET_MS[kind]} ms: {verdict}"
            )
    lines += beside_unwind(variants)
    rate, forks = appended
    verdict = "met" if rate >= TARGET_APPENDS and forks.startswith("0 ") else "NOT met"
    lines += [
        f"appends, {args.agents} agents on one store: {rate:,.0f} entries/s, {forks}; "
        f"target >= {TARGET_APPENDS:,}/s and 0 forks: {verdict}",
        *checks,
        "",
        "durable writes on this disk, measured right after (median / p95, ms):",
        *(f"  {label:<28}{median(times):>8.3f} / {p95(times):.3f}" for label, times in durable.items()),
        "  (every recorded call, read or write, waits for one Run Record append)",
    ]
    if args.transport == "http":
        lines.append("(the client reaches each variant over HTTP, and each gateway its CRM over stdio;")
        lines.append(" the relay and unwind-mcp serve stdio only and were left out)")
    elif not any(variant.name.endswith(HANDSHAKE) for variant in variants):
        lines.append("(unwind-mcp speaks the handshake era only: --eras both or handshake runs it beside)")
    elif not any(variant.name == "unwind" for variant in variants):
        lines.append("(unwind-mcp is not installed: its variant was left out; see bench/README.md)")
    return "\n".join(lines)


def protocols(variants: list[Variant]) -> str:
    """The protocol versions spoken, and by which variants when they differ."""
    spoken: dict[str, list[str]] = {}
    for variant in variants:
        spoken.setdefault(variant.protocol, []).append(variant.name)
    if len(spoken) == 1:
        return f"{next(iter(spoken))} (every variant)"
    return "; ".join(f"{version} ({', '.join(names)})" for version, names in spoken.items())


def beside_unwind(variants: list[Variant]) -> list[str]:
    """Each Recorder's cost as a multiple of unwind-mcp's, where unwind-mcp ran: wall time added
    over direct (medians), and CPU per call (steadier on a busy machine)."""
    found = {variant.name: variant for variant in variants}
    unwind = found.get("unwind")
    if unwind is None:
        return []
    bases = {variant.name: variant.samples for variant in variants}

    def added(variant: Variant, kind: str) -> float:
        return median(variant.samples[kind]) - median(bases[variant.base][kind])

    def ratio(ours: float | None, theirs: float | None) -> str:
        return f"{ours / theirs:.1f}x" if ours is not None and theirs and theirs > 0 else "no ratio"

    lines = ["", "beside unwind-mcp (handshake era, over 'direct, hs'):"]
    for variant in (v for v in variants if v.name.startswith("recorder")):
        for kind in KINDS:
            ours, theirs = added(variant, kind), added(unwind, kind)
            lines.append(
                f"  {variant.name + ' ' + kind + ':':<29} recorder adds {ours:+.2f} ms, unwind adds "
                f"{theirs:+.2f} ms: {ratio(ours, theirs)}"
            )
        lines.append(
            f"  {variant.name + ' CPU:':<29} recorder {variant.cpu_ms or 0:.2f} ms per call, unwind "
            f"{unwind.cpu_ms or 0:.2f} ms: {ratio(variant.cpu_ms, unwind.cpu_ms)}"
        )
    return lines


@dataclass
class Planned:
    """A variant to start: its command, era, client, and how its process is told apart."""

    name: str
    command: list[str]
    legacy: bool = False
    sdk: bool = False
    mark: str | None = None  # a piece of its command line (None: no gateway process of its own)
    store: Path | None = None  # a Recorder's store
    key: Path | None = None  # and its key


def plan(args: Any, workdir: Path, memory: Path | None, profile: Path | None) -> list[Planned]:
    """Every variant of this run, in the eras asked for."""
    eras = {"both": (False, True), "2026": (False,), "handshake": (True,)}[args.eras]
    unwind = str(args.unwind) if args.unwind is not None else shutil.which("unwind")
    planned: list[Planned] = []
    for legacy in eras:
        tail, file = (HANDSHAKE, "-hs") if legacy else ("", "")
        planned.append(Planned("direct" + tail, crm(workdir, "direct" + file), legacy))
        relayed = crm(workdir, "relayed" + file)
        planned.append(
            Planned("relay" + tail, [sys.executable, str(RELAY), *relayed], legacy, mark=relayed[-1])
        )
        proxied = crm(workdir, "proxied" + file)
        proxy = [sys.executable, str(PLAIN_PROXY), *proxied]
        planned.append(Planned("fastmcp proxy" + tail, proxy, legacy, mark=proxied[-1]))
        recorders = [("recorder", workdir / f"recorder{file}.db")]
        if memory is not None:
            recorders.append(("tmpfs", memory / f"tmpfs{file}.db"))
            if args.baseline is not None:
                recorders.append(("baseline", memory / f"baseline{file}.db"))
        for name, store in recorders:
            command = recorder_command(
                workdir, name + file, store, profile if name == "recorder" and legacy == eras[0] else None
            )
            if name == "baseline":
                command = [str(args.baseline), *command[1:]]
            label = (
                "recorder" if name == "recorder" else f"{name if name == 'baseline' else 'recorder'}, tmpfs"
            )
            key = workdir / f"{name}{file}.key"
            planned.append(
                Planned(
                    label + tail,
                    command,
                    legacy,
                    mark=str(workdir / f"{name}{file}.toml"),
                    store=store,
                    key=key,
                )
            )
        if args.tracing:
            traced = workdir / f"traced{file}.db"
            command = recorder_command(workdir, "traced" + file, traced, tracing=True)
            key, mark = workdir / f"traced{file}.key", str(workdir / f"traced{file}.toml")
            variant = Planned("recorder, traced" + tail, command, legacy, mark=mark, store=traced, key=key)
            planned.append(variant)
    if True in eras:
        if unwind is not None:
            planned.append(Planned("unwind", unwind_command(unwind, workdir), True, mark="unwind_serve.py"))
        if args.transport == "stdio":
            planned.append(Planned("direct, SDK", crm(workdir, "direct-sdk"), True, sdk=True))
            command = recorder_command(workdir, "recorder-sdk", workdir / "recorder-sdk.db")
            store, key = workdir / "recorder-sdk.db", workdir / "recorder-sdk.key"
            planned.append(
                Planned("recorder, SDK", command, True, True, str(workdir / "recorder-sdk.toml"), store, key)
            )
    if args.transport == "http":
        planned = [p for p in planned if not p.sdk and p.name.removesuffix(HANDSHAKE) in HTTP_VARIANTS]
    return planned


def base_of(planned: Planned, names: set[str]) -> str:
    """The direct variant a variant is compared with: the one of its era and client."""
    if planned.sdk:
        return "direct, SDK"
    return "direct" + HANDSHAKE if planned.legacy and "direct" + HANDSHAKE in names else "direct"


async def bench(args: Any, workdir: Path) -> None:
    profile = args.profile.resolve() if args.profile else None
    memory_disk = MEMORY_DISK if MEMORY_DISK.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="recorder-bench-", dir=memory_disk) as memory:
        planned = plan(args, workdir, Path(memory) if memory_disk is not None else None, profile)
        names = {p.name for p in planned}
        async with AsyncExitStack() as stack:
            variants = []
            for each in planned:
                if each.sdk:
                    made: Any = SdkClient(each.command, workdir)
                elif args.transport == "http":
                    base_name = each.name.removesuffix(HANDSHAKE)
                    made = await http_client(stack, base_name, each.command, workdir, legacy=each.legacy)
                else:
                    made = client(each.command, workdir, legacy=each.legacy)
                connected = await stack.enter_async_context(made)
                prefix = "crm_" if each.name.startswith(("recorder", "baseline")) else ""
                protocol = connected.protocol_version or "?"
                variants.append(Variant(each.name, connected, prefix, protocol, base_of(each, names)))
            await run_calls(variants, 0, args.warmup)  # unmeasured: each variant's first calls
            running = children()
            pids = {p.name: pid for p in planned if p.mark for pid, line in running.items() if p.mark in line}
            missing = [p.name for p in planned if p.mark and p.name not in pids]
            if missing:
                raise SystemExit(f"no process found for {missing}")
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            # the first era's Recorder on disk runs under cProfile ("recorder" or "recorder, hs")
            profiled = next((p.name for p in planned if PROFILE_RECORDER in p.command), "")
            if profile is not None:
                os.kill(pids[profiled], signal.SIGUSR1)
            await run_calls(variants, args.calls, 0)
            if profile is not None:
                profile.unlink(missing_ok=True)
                os.kill(pids[profiled], signal.SIGUSR2)
                while not profile.exists():  # written whole, then renamed
                    await asyncio.sleep(0.05)
            for variant in variants:
                if variant.name in pids:
                    spent = cpu_seconds(pids[variant.name]) - before[variant.name]
                    variant.cpu_ms = spent * 1e3 / (2 * args.calls)
        calls = 2 * (args.calls + args.warmup)
        checks = [
            f"{p.name}: {check_the_record(p.store, p.key, calls)}"
            for p in planned
            if p.store is not None and p.key is not None
        ]
        if "unwind" in names:
            checks.append(f"unwind: {check_unwinds_log(workdir, calls)}")
    if profile is not None:
        checks.append(f"the Recorder's measured calls were profiled: {profile} (python -m pstats)")
    appended = await appends(workdir, args.agents, args.appends)
    print(report(variants, args, checks, appended, durable_costs(workdir, 200)))


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the options and run the benchmark."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calls", type=int, default=500, help="measured calls per kind and variant (default 500)"
    )
    parser.add_argument(
        "--tracing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a Recorder with OpenTelemetry spans on (console exporter), beside the one with them off",
    )
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured calls per kind and variant first")
    parser.add_argument("--agents", type=int, default=8, help="concurrent agents in the appends bench")
    parser.add_argument("--appends", type=int, default=500, help="entries each agent appends")
    parser.add_argument("--profile", type=Path, help="run the Recorder under cProfile, writing stats here")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also run the Recorder of another checkout (the python of its venv) on tmpfs, interleaved: "
        "CPU per call before and after a change, side by side",
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="how the client reaches every variant: stdio (default), or streamable HTTP to servers the "
        "bench starts on free ports (direct, the FastMCP proxy and the Recorders; each gateway still "
        "reaches its CRM over stdio)",
    )
    parser.add_argument(
        "--eras",
        choices=("both", "2026", "handshake"),
        default="both",
        help="which MCP protocol eras every variant runs in, side by side: both (default), the 2026 one, "
        "or the handshake one (initialize first, as unwind-mcp always is)",
    )
    parser.add_argument("--legacy", action="store_true", help="the same as --eras handshake")
    parser.add_argument(
        "--unwind",
        type=Path,
        help="unwind-mcp's `unwind` command, if it is not on the PATH (e.g. .venv-peers/bin/unwind)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.legacy:
        args.eras = "handshake"
    if args.calls < 20:
        parser.error("--calls must be at least 20 (for a p95)")
    if args.unwind is not None and not args.unwind.is_file():
        parser.error(f"--unwind: no such file: {args.unwind}")
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="recorder-bench-", dir=args.dir) as workdir:
        asyncio.run(bench(args, Path(workdir)))


if __name__ == "__main__":
    main()
