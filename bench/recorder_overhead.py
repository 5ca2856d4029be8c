"""What the Recorder adds to a tool call (issue 4, item 7).

The same calls go to the example deals server (``tests/toolkit/example_server.py``) six ways,
interleaved in one run so that machine noise hits every path alike:

* ``direct``: an MCP client talks to the server over stdio;
* ``proxy``: the client talks in memory to a plain FastMCP proxy (``create_proxy`` over a kept-open
  stdio session to its own copy of the server), which forwards and journals nothing: the cost of
  being an MCP hop at all;
* ``recorded``: the agent's client talks in memory to the Recorder, which forwards over stdio to
  its own copy of the server and journals every call in a Run Record (SQLite, WAL,
  ``synchronous=FULL``);
* ``proxy-stdio`` and ``recorded-stdio``: the same two, each in its own process reached over
  stdio, as an agent reaches ``hatp-recorder serve`` (``bench/plain_proxy.py`` is the proxy);
* ``in-memory``: a client talks to the server in-process, for reference (no transport at all).

Each iteration makes one read (``get_deal``) and one journaled write (``set_stage``, alternating
Won and Proposal) on every path, rotating which path goes first. The added overhead is
``recorded - direct`` (both reach the server over stdio); it splits into ``proxy - direct`` (the
hop) and ``recorded - proxy`` (journaling, policy and intake), for either way the agent reaches
the gateway. Then the durable-write costs are taken apart: a bare ``fsync``, a one-row SQLite
commit with ``synchronous=FULL`` and ``NORMAL``, and a Run Record append under both settings.

Run: ``.venv/bin/python bench/recorder_overhead.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from sqlalchemy import Engine, create_engine, event

from hatp_journal.recorder import gateway
from hatp_journal.recorder.config import RecorderConfig, RecorderSection, ServerConfig
from hatp_journal.recorder.gateway import Recorder
from hatp_journal.recorder.policy import load_policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "toolkit" / "example_server.py"
sys.path.insert(0, str(EXAMPLE.parent))

import example_server  # noqa: E402  (a test helper, found through the path set just above)

TARGET_MS = {"read": 0.5, "write": 1.5}
"""Issue 4: the Recorder adds at most this much to the median call."""

POLICY = {
    "autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask"},
    "undoAuthority": "human://acme.com/role/team-lead",
}
DEAL = "D-881"
STAGES = ("Won", "Proposal")
KINDS = ("read", "write")
QUIET = {"FASTMCP_LOG_LEVEL": "WARNING"}
"""For both stdio servers alike: no start-up banner lines in the figures."""
PATHS = ("direct", "proxy", "recorded", "proxy-stdio", "recorded-stdio", "in-memory")
FRONTS = {"agent in memory": ("proxy", "recorded"), "agent over stdio": ("proxy-stdio", "recorded-stdio")}
"""How the agent reaches the gateway: (plain proxy, Recorder) paths."""
PLAIN_PROXY = Path(__file__).resolve().parent / "plain_proxy.py"
SERVE_RECORDER = "from hatp_journal.recorder.cli import main; raise SystemExit(main())"


@dataclass
class Route:
    """One way of reaching the server (a path), and what its calls cost."""

    name: str
    client: Client[Any]
    prefix: str
    writes: int = 0
    samples: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    async def call(self, kind: str, *, keep: bool) -> None:
        """Make one call of ``kind`` and, if ``keep``, record its wall time in ms."""
        if kind == "read":
            name, arguments = "get_deal", {"deal_id": DEAL}
        else:
            name, arguments = "set_stage", {"deal_id": DEAL, "stage": STAGES[self.writes % 2]}
            self.writes += 1
        start = time.perf_counter_ns()
        result = await self.client.call_tool_mcp(self.prefix + name, arguments)
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if result.is_error or (result.structured_content or {}).get("status") == "pending_approval":
            raise SystemExit(f"{self.name} {name} did not go through: {result.content}")
        if keep:
            self.samples[kind].append(elapsed)


@dataclass
class Breakdown:
    """Where a recorded call's time goes: wall time spent inside a few Recorder collaborators."""

    samples: dict[str, list[float]] = field(default_factory=dict)

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` (sync or async), timed into ``label``."""
        if asyncio.iscoroutinefunction(function):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter_ns()
                try:
                    return await function(*args, **kwargs)
                finally:
                    self.add(label, start)

            return timed_async

        def timed_sync(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(label, start)

        return timed_sync

    def add(self, label: str, start: int) -> None:
        """Record the time since ``start`` under ``label``."""
        self.samples.setdefault(label, []).append((time.perf_counter_ns() - start) / 1e6)

    def instrument(self, recorder: Recorder) -> None:
        """Time the downstream calls, the Run Record's appends and reads, the intake and the policy.

        Public methods on the instances; intake and policy through the names the gateway calls
        them by (skipped if the gateway no longer has them).
        """
        for downstream in recorder.downstreams.values():
            downstream.call = self.wrap("downstream call over stdio", downstream.call)  # type: ignore[method-assign]
        store = recorder.store
        store.append = self.wrap("Run Record append (one per call)", store.append)  # type: ignore[method-assign]
        store.entries = self.wrap("Run Record reads of the whole run", store.entries)  # type: ignore[method-assign]
        for name, label in (
            ("take_in", "intake: bounds, wire model, receipt"),
            ("decide", "policy decision"),
        ):
            if callable(getattr(gateway, name, None)):
                setattr(gateway, name, self.wrap(label, getattr(gateway, name)))


def median(values: Sequence[float]) -> float:
    """The median."""
    return statistics.median(values)


def p95(values: Sequence[float]) -> float:
    """The 95th percentile (inclusive method)."""
    return statistics.quantiles(values, n=20, method="inclusive")[18]


async def run_calls(paths: list[Route], calls: int, warmup: int, breakdown: Breakdown) -> None:
    """Warm up, then ``calls`` iterations of one read and one write per path, rotating the order."""
    for iteration in range(warmup + calls):
        if iteration == warmup:
            breakdown.samples.clear()
        order = paths[iteration % len(paths) :] + paths[: iteration % len(paths)]
        for kind in KINDS:
            for path in order:
                await path.call(kind, keep=iteration >= warmup)


def open_direct(workdir: Path, key: Path, name: str = "direct") -> Client[Any]:
    """A client to the example server (its own database, ``{name}.db``) over stdio."""
    db = workdir / f"{name}.db"
    transport = StdioTransport(
        sys.executable,
        [str(EXAMPLE), "--db", str(db), "--key", str(key)],
        env={**os.environ, **QUIET},
        cwd=str(workdir),
    )
    return Client(transport)


async def open_proxy(stack: AsyncExitStack, workdir: Path, key: Path) -> FastMCP[Any]:
    """A plain FastMCP proxy over one kept-open stdio session to a copy of the server.

    It forwards calls and journals nothing. The Recorder keeps its backend sessions open too, so
    the two differ only by what the Recorder does with each call.
    """
    backend = await stack.enter_async_context(open_direct(workdir, key, "proxied"))
    # create_proxy logs at INFO that it reuses the connected session: that is the point here.
    logging.getLogger("fastmcp.server.providers.proxy").setLevel(logging.WARNING)
    return create_proxy(backend, name="plain-proxy")


def open_proxy_stdio(workdir: Path, key: Path) -> Client[Any]:
    """A client over stdio to ``bench/plain_proxy.py``, which keeps a session to its own server."""
    server = [sys.executable, str(EXAMPLE), "--db", str(workdir / "proxied-stdio.db"), "--key", str(key)]
    transport = StdioTransport(
        sys.executable, [str(PLAIN_PROXY), *server], env={**os.environ, **QUIET}, cwd=str(workdir)
    )
    return Client(transport)


def open_recorded_stdio(workdir: Path, key: Path) -> tuple[Client[Any], Path]:
    """A client over stdio to ``hatp-recorder serve`` (its own process, config and store)."""
    server = {
        "command": sys.executable,
        "args": [str(EXAMPLE), "--db", str(workdir / "recorded-stdio.db"), "--key", str(key)],
        "cwd": str(workdir),
    }
    config = workdir / "recorder-stdio.toml"
    # JSON strings are TOML basic strings; the policy file is written by open_recorded.
    config.write_text(
        "[recorder]\n"
        'store = "recorder-stdio.db"\nkey = "recorder-stdio.key"\npolicy = "policy.json"\n'
        'agent = "bench"\nprincipal = "human://acme.com/bench"\n\n'
        "[servers.deals]\n"
        + "".join(f"{name} = {json.dumps(value)}\n" for name, value in server.items())
        + f"env = {{ FASTMCP_LOG_LEVEL = {json.dumps(QUIET['FASTMCP_LOG_LEVEL'])} }}\n"
    )
    transport = StdioTransport(
        sys.executable,
        ["-c", SERVE_RECORDER, "--config", str(config), "serve"],
        env={**os.environ, **QUIET},
        cwd=str(workdir),
    )
    return Client(transport), workdir / "recorder-stdio.db"


async def open_recorded(stack: AsyncExitStack, workdir: Path, key: Path) -> tuple[Client[Any], Recorder]:
    """The Recorder fronting a stdio copy of the example server, and an in-memory agent client."""
    (workdir / "policy.json").write_text(json.dumps(POLICY))
    config = RecorderConfig(
        recorder=RecorderSection(agent="bench", principal="human://acme.com/bench"),
        servers={
            "deals": ServerConfig(
                command=sys.executable,
                args=[str(EXAMPLE), "--db", str(workdir / "recorded.db"), "--key", str(key)],
                env=QUIET,
                cwd=str(workdir),
            )
        },
    )
    store = RunStore(workdir / "recorder.db", SigningKey.generate())
    recorder = Recorder(config, store=store, policy=load_policy(workdir / "policy.json"))
    mcp = await recorder.start(stack)
    return Client(mcp), recorder


def check_the_record(store: RunStore, run_id: str, calls: int, warmup: int) -> str:
    """A recorded path really journaled every call: allowed, writes verified."""
    entries = store.entries(run_id)
    expected = 2 * (calls + warmup)
    decisions = {entry.body.get("decision", {}).get("action") for entry in entries}
    writes = [entry for entry in entries if entry.body.get("tool") == "set_stage"]
    verified = sum(entry.body.get("intake", {}).get("status") == "verified" for entry in writes)
    if len(entries) != expected or decisions != {"allow"} or verified != len(writes):
        raise SystemExit(
            f"the Run Record is not what the bench expects: {len(entries)} entries (want {expected}), "
            f"decisions {decisions}, {verified}/{len(writes)} writes verified"
        )
    return f"{len(entries)} entries, every call allowed, {verified} writes with verified receipts"


# -- durable writes, taken apart ----------------------------------------------------------------


def fsync_action(workdir: Path, cleanup: ExitStack) -> Callable[[], None]:
    """Append 200 bytes to a file and fsync it."""
    fd = os.open(workdir / "fsync.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    cleanup.callback(os.close, fd)

    def append_and_sync() -> None:
        os.write(fd, b"x" * 200)
        os.fsync(fd)

    return append_and_sync


def commit_action(workdir: Path, synchronous: str, cleanup: ExitStack) -> Callable[[], None]:
    """One-row INSERT and COMMIT in WAL mode with the given ``synchronous`` setting."""
    connection = sqlite3.connect(workdir / f"commit-{synchronous}.db", isolation_level=None)
    cleanup.callback(connection.close)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={synchronous}")
    connection.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, data BLOB)")

    def commit() -> None:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO t (data) VALUES (?)", (b"x" * 600,))
        connection.execute("COMMIT")

    return commit


def engine_with(path: Path, synchronous: str) -> Engine:
    """A SQLite engine set up like the toolkit's (WAL, BEGIN IMMEDIATE) with ``synchronous`` chosen."""
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def on_connect(connection: Any, _record: Any) -> None:
        connection.isolation_level = None
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def append_action(
    workdir: Path, synchronous: str, body: dict[str, Any], cleanup: ExitStack
) -> Callable[[], None]:
    """A Run Record append of a real recorded call's body, with ``synchronous`` chosen."""
    engine = engine_with(workdir / f"append-{synchronous}.db", synchronous)
    cleanup.callback(engine.dispose)
    store = RunStore(engine, SigningKey.generate())
    run = store.open_run(agent="bench", principal="human://acme.com/bench").id

    def append() -> None:
        store.append(run, "call", body)

    return append


def durable_costs(workdir: Path, body: dict[str, Any], samples: int) -> dict[str, list[float]]:
    """Each durable-write measure ``samples`` times, interleaved, in ms."""
    with ExitStack() as cleanup:
        actions = {
            "fsync of a 200-byte append": fsync_action(workdir, cleanup),
            "SQLite one-row commit, WAL, synchronous=FULL": commit_action(workdir, "FULL", cleanup),
            "SQLite one-row commit, WAL, synchronous=NORMAL": commit_action(workdir, "NORMAL", cleanup),
            "Run Record append, synchronous=FULL": append_action(workdir, "FULL", body, cleanup),
            "Run Record append, synchronous=NORMAL": append_action(workdir, "NORMAL", body, cleanup),
        }
        times: dict[str, list[float]] = {label: [] for label in actions}
        for _ in range(samples):
            for label, action in actions.items():
                start = time.perf_counter_ns()
                action()
                times[label].append((time.perf_counter_ns() - start) / 1e6)
    return times


# -- report ---------------------------------------------------------------------------------------


def report(
    paths: dict[str, Route],
    durable: dict[str, list[float]],
    spent: dict[str, list[float]],
    record_check: list[str],
    args: Any,
) -> str:
    """The figures as printed."""
    lines = [
        f"Recorder overhead — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.calls} calls per kind and path "
        f"(+{args.warmup} warm-up), interleaved",
        f"{platform.python_implementation()} {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        f"{'ms per call':<34}{'read median':>12}{'p95':>9}{'write median':>15}{'p95':>9}",
    ]
    labels = {
        "direct": "direct, stdio",
        "proxy": "plain proxy, agent in memory",
        "recorded": "Recorder, agent in memory",
        "proxy-stdio": "plain proxy, agent over stdio",
        "recorded-stdio": "Recorder, agent over stdio",
        "in-memory": "in-memory, in-process (reference)",
    }
    for name in PATHS:
        read, write = paths[name].samples["read"], paths[name].samples["write"]
        lines.append(
            f"{labels[name]:<34}{median(read):>12.2f}{p95(read):>9.2f}{median(write):>15.2f}{p95(write):>9.2f}"
        )
    lines.append("(gateways reach their own copy of the server over stdio, like direct)")
    for front, (proxy_path, recorder_path) in FRONTS.items():
        lines += ["", f"added by the Recorder, {front}:"]
        for kind in KINDS:
            direct, recorded = paths["direct"].samples[kind], paths[recorder_path].samples[kind]
            proxy = paths[proxy_path].samples[kind]
            added = median(recorded) - median(direct)
            added_p95 = p95(recorded) - p95(direct)
            verdict = "met" if added <= TARGET_MS[kind] else "NOT met"
            quarter = max(1, len(recorded) // 4)
            early = median(recorded[:quarter]) - median(direct[:quarter])
            late = median(recorded[-quarter:]) - median(direct[-quarter:])
            ratio = median(recorded) / median(direct)
            hop, journaling = median(proxy) - median(direct), median(recorded) - median(proxy)
            lines += [
                f"  {kind:<5}: median {added:+.2f} ms (ratio {ratio:.2f}x), p95 {added_p95:+.2f} ms; "
                f"target <= {TARGET_MS[kind]} ms: {verdict}",
                f"{'':<9}of which the MCP hop (proxy - direct) {hop:+.2f} ms, "
                f"journaling, policy and intake (Recorder - proxy) {journaling:+.2f} ms",
                f"{'':<9}first quarter of the run {early:+.2f} ms, last quarter {late:+.2f} ms",
            ]
    recorded_calls = sum(len(paths["recorded"].samples[kind]) for kind in KINDS)
    recorded_mean = sum(sum(paths["recorded"].samples[kind]) for kind in KINDS) / recorded_calls
    inside = sum(sum(samples) for samples in spent.values()) / recorded_calls
    lines += [
        "",
        "where a call through the Recorder (agent in memory) spends its time,",
        f"ms per call (mean over reads and writes: {recorded_mean:.2f}):",
        f"  {'':<48}{'mean':>8}{'median':>9}",
    ]
    for label, samples in spent.items():
        lines.append(f"  {label:<48}{sum(samples) / recorded_calls:>8.2f}{median(samples):>9.2f}")
    rest = "the rest (agent hop, FastMCP dispatch, gateway)"
    lines.append(f"  {rest:<48}{recorded_mean - inside:>8.2f}")
    lines += ["", *record_check, "", "durable writes on this disk (median / p95, ms):"]
    for label, samples in durable.items():
        lines.append(f"  {label:<48}{median(samples):>8.3f} / {p95(samples):.3f}")
    full, normal = (
        median(durable["Run Record append, synchronous=FULL"]),
        median(durable["Run Record append, synchronous=NORMAL"]),
    )
    lines.append(
        f"  -> synchronous=FULL costs {full - normal:.3f} ms of each append ({full:.3f} vs {normal:.3f})"
    )
    lines.append("     and every recorded call, read or write, makes one append")
    return "\n".join(lines)


async def bench(args: Any, workdir: Path) -> None:
    key = workdir / "server.key"
    SigningKey.generate().save(key)
    async with AsyncExitStack() as stack:
        direct = await stack.enter_async_context(open_direct(workdir, key))
        proxy = await stack.enter_async_context(Client(await open_proxy(stack, workdir, key)))
        agent_client, recorder = await open_recorded(stack, workdir, key)
        agent = await stack.enter_async_context(agent_client)
        proxy_stdio = await stack.enter_async_context(open_proxy_stdio(workdir, key))
        stdio_client, stdio_store = open_recorded_stdio(workdir, key)
        agent_stdio = await stack.enter_async_context(stdio_client)
        mcp, _ = example_server.build(workdir / "memory.db", SigningKey.from_file(key))
        memory = await stack.enter_async_context(Client(mcp))
        paths = {
            "direct": Route("direct", direct, ""),
            "proxy": Route("proxy", proxy, ""),
            "recorded": Route("recorded", agent, "deals_"),
            "proxy-stdio": Route("proxy-stdio", proxy_stdio, ""),
            "recorded-stdio": Route("recorded-stdio", agent_stdio, "deals_"),
            "in-memory": Route("in-memory", memory, ""),
        }
        breakdown = Breakdown()
        breakdown.instrument(recorder)
        await run_calls(list(paths.values()), args.calls, args.warmup, breakdown)
        spent = dict(breakdown.samples)  # before the checks below read the record again
        assert recorder.run_id is not None
        in_memory = check_the_record(recorder.store, recorder.run_id, args.calls, args.warmup)
        checks = [f"Run Record, agent in memory: {in_memory}"]
        body = recorder.store.entries(recorder.run_id)[-1].body
        recorder.close()
    # The stdio Recorder closed its run when its client went away; read what it wrote.
    served = RunStore(stdio_store, SigningKey.generate())
    (run,) = served.runs()
    checks.append(
        f"Run Record, agent over stdio: {check_the_record(served, run.id, args.calls, args.warmup)}"
    )
    served.dispose()
    durable = durable_costs(workdir, body, args.durable_samples)
    print(report(paths, durable, spent, checks, args))


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the options and run the benchmark."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calls", type=int, default=200, help="measured calls per kind and path (default 200)"
    )
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured calls per kind and path first")
    parser.add_argument("--durable-samples", type=int, default=300, help="samples per durable-write measure")
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.calls < 20:
        parser.error("--calls must be at least 20 (for a p95)")
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="recorder-bench-", dir=args.dir) as workdir:
        asyncio.run(bench(args, Path(workdir)))


if __name__ == "__main__":
    main()
