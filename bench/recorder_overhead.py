"""What the Recorder adds to a tool call (issue 4, item 7).

The same calls go to the example deals server (``tests/toolkit/example_server.py``) four ways,
interleaved in one run so that machine noise hits every path alike:

* ``direct``: an MCP client talks to the server over stdio;
* ``proxy``: the client talks in memory to a plain FastMCP proxy (``create_proxy`` over a kept-open
  stdio session to its own copy of the server), which forwards and journals nothing: the cost of
  being an MCP hop at all;
* ``recorded``: the agent's client talks in memory to the Recorder, which forwards over stdio to
  its own copy of the server and journals every call in a Run Record (SQLite, WAL,
  ``synchronous=FULL``);
* ``in-memory``: a client talks to the server in-process, for reference (no transport at all).

Each iteration makes one read (``get_deal``) and one journaled write (``set_stage``, alternating
Won and Proposal) on every path, rotating which path goes first. The added overhead is
``recorded - direct`` (both reach the server over stdio); it splits into ``proxy - direct`` (the
hop) and ``recorded - proxy`` (journaling, policy and intake). Then the durable-write costs are
taken apart: a bare ``fsync``, a one-row SQLite commit with ``synchronous=FULL`` and ``NORMAL``,
and a Run Record append under both settings.

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
PATHS = ("direct", "proxy", "recorded", "in-memory")


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

    totals: dict[str, float] = field(default_factory=dict)

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
        """Add the time since ``start`` to ``label``."""
        self.totals[label] = self.totals.get(label, 0.0) + (time.perf_counter_ns() - start) / 1e6

    def instrument(self, recorder: Recorder) -> None:
        """Time the downstream calls and the Run Record's appends and reads (public methods only)."""
        for downstream in recorder.downstreams.values():
            downstream.call = self.wrap("downstream call over stdio", downstream.call)  # type: ignore[method-assign]
        store = recorder.store
        store.append = self.wrap("Run Record append (one per call)", store.append)  # type: ignore[method-assign]
        store.entries = self.wrap("Run Record reads of the whole run", store.entries)  # type: ignore[method-assign]


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
            breakdown.totals.clear()
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


def check_the_record(recorder: Recorder, calls: int, warmup: int) -> str:
    """The recorded path really journaled every call: allowed, writes verified."""
    assert recorder.run_id is not None
    entries = recorder.store.entries(recorder.run_id)
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
    spent: dict[str, float],
    record_check: str,
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
        "proxy": "plain FastMCP proxy (stdio down)",
        "recorded": "through the Recorder (stdio down)",
        "in-memory": "in-memory, in-process (reference)",
    }
    for name in PATHS:
        read, write = paths[name].samples["read"], paths[name].samples["write"]
        lines.append(
            f"{labels[name]:<34}{median(read):>12.2f}{p95(read):>9.2f}{median(write):>15.2f}{p95(write):>9.2f}"
        )
    lines.append("")
    for kind in KINDS:
        direct, recorded = paths["direct"].samples[kind], paths["recorded"].samples[kind]
        added = median(recorded) - median(direct)
        added_p95 = p95(recorded) - p95(direct)
        verdict = "met" if added <= TARGET_MS[kind] else "NOT met"
        quarter = max(1, len(recorded) // 4)
        early = median(recorded[:quarter]) - median(direct[:quarter])
        late = median(recorded[-quarter:]) - median(direct[-quarter:])
        ratio = median(recorded) / median(direct)
        lines.append(
            f"added by the Recorder, {kind:<5}: median +{added:.2f} ms (ratio {ratio:.2f}x), "
            f"p95 +{added_p95:.2f} ms; target <= {TARGET_MS[kind]} ms: {verdict}"
        )
        lines.append(f"{'':<29}first quarter of the run +{early:.2f} ms, last quarter +{late:.2f} ms")
        proxy = paths["proxy"].samples[kind]
        hop, journaling = median(proxy) - median(direct), median(recorded) - median(proxy)
        lines.append(
            f"{'':<29}of which being an MCP hop at all (proxy - direct) {hop:+.2f} ms, "
            f"journaling, policy and intake (Recorder - proxy) {journaling:+.2f} ms"
        )
    recorded_calls = sum(len(paths["recorded"].samples[kind]) for kind in KINDS)
    recorded_mean = sum(sum(paths["recorded"].samples[kind]) for kind in KINDS) / recorded_calls
    inside = sum(spent.values()) / recorded_calls
    lines += ["", f"where a recorded call's time goes (mean over reads and writes, {recorded_mean:.2f} ms):"]
    for label, total in spent.items():
        lines.append(f"  {label:<48}{total / recorded_calls:>8.2f}")
    lines.append(f"  {'the rest (agent hop, policy, intake, FastMCP)':<48}{recorded_mean - inside:>8.2f}")
    lines += ["", f"Run Record check: {record_check}", "", "durable writes on this disk (median / p95, ms):"]
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
        mcp, _ = example_server.build(workdir / "memory.db", SigningKey.from_file(key))
        memory = await stack.enter_async_context(Client(mcp))
        paths = {
            "direct": Route("direct", direct, ""),
            "proxy": Route("proxy", proxy, ""),
            "recorded": Route("recorded", agent, "deals_"),
            "in-memory": Route("in-memory", memory, ""),
        }
        breakdown = Breakdown()
        breakdown.instrument(recorder)
        await run_calls(list(paths.values()), args.calls, args.warmup, breakdown)
        spent = dict(breakdown.totals)  # before the checks below read the record again
        record_check = check_the_record(recorder, args.calls, args.warmup)
        assert recorder.run_id is not None
        body = recorder.store.entries(recorder.run_id)[-1].body
        recorder.close()
    durable = durable_costs(workdir, body, args.durable_samples)
    print(report(paths, durable, spent, record_check, args))


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
