"""How the Run Record store scales: SQLite beside PostgreSQL, in one run (issue 17).

Two measurements, each on a SQLite file (WAL, ``synchronous=FULL``) and on a throwaway PostgreSQL
cluster started with fsync on (``fsync``, ``synchronous_commit`` and ``full_page_writes`` at their
defaults, so both stores are durable alike), the backends interleaved:

* **appends**: 1, 8 and 32 concurrent writers (asyncio tasks, as a Recorder serves its agents),
  each appending ``--appends`` call-shaped entries to a run of its own through
  ``RunStore.append_async``, on one store in one process. Printed: entries per second, and
  that no run forked (contiguous seqs, each entry after its predecessor's hash).
* **calls**: 1 and 4 ``hatp-recorder serve`` processes on one store, each in front of its own
  ``hatp-crm`` over stdio with one client making ``--calls`` writes (``update_deal``) as fast as
  answers come back. Printed: recorded calls per second over all processes, and that every
  record verifies with every call in it.

PostgreSQL comes from Debian's packages (``make postgresql``); without it only SQLite is measured
and the table says so. The load average is printed: on a shared machine, compare columns of one
run, not runs.

Run: ``.venv/bin/python bench/store_scale.py`` or ``make bench-store``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from recorder_overhead import BODY, DEAL, STAGES, client, recorder_command  # sibling scripts

from hatp_journal._shared.pytest_postgres import ThrowawayCluster, find_postgres, require_postgres
from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.toolkit import SigningKey

WRITERS = (1, 8, 32)
RECORDERS = (1, 4)


def say(line: str) -> None:
    """Progress, on stderr so the table on stdout stays clean."""
    print(line, file=sys.stderr, flush=True)


class Backends:
    """Where each measurement gets a fresh store: a SQLite file, or a schema on the cluster."""

    def __init__(self, workdir: Path, cluster: ThrowawayCluster | None) -> None:
        self.workdir = workdir
        self.cluster = cluster
        self._made = 0

    @property
    def names(self) -> list[str]:
        return ["sqlite", "postgresql"] if self.cluster is not None else ["sqlite"]

    def fresh(self, backend: str) -> str:
        self._made += 1
        if backend == "sqlite":
            return str(self.workdir / f"store-{self._made}.db")
        assert self.cluster is not None
        return self.cluster.new_store()


def forks_in(store: RunStore, runs: Sequence[str], each: int) -> int:
    """Entries missing, repeated or not chained after their predecessor, over ``runs``."""
    forks = 0
    for run in runs:
        entries = store.entries(run)
        forks += abs(len(entries) - each)
        forks += sum(e.seq != n for n, e in enumerate(entries, start=1))
        forks += sum(later.prev_hash != earlier.hash for earlier, later in pairwise(entries))
    return forks


async def appends(url: str, writers: int, each: int) -> tuple[float, int]:
    """``writers`` tasks append ``each`` entries to runs of their own; (entries per second, forks)."""
    store = RunStore(url, SigningKey.generate())
    try:
        runs = [
            store.open_run(agent=f"agent-{n}", principal="human://acme.com/bench").id for n in range(writers)
        ]

        async def writer(run: str) -> None:
            for _ in range(each):
                await store.append_async(run, "call", BODY)

        start = time.perf_counter()
        await asyncio.gather(*(writer(run) for run in runs))
        elapsed = time.perf_counter() - start
        return writers * each / elapsed, forks_in(store, runs, each)
    finally:
        store.dispose()


async def calls(workdir: Path, url: str, recorders: int, each: int, tag: str) -> tuple[float, str]:
    """``recorders`` Recorder processes on the store at ``url``, ``each`` writes through each."""
    names = [f"{tag}-r{n}" for n in range(recorders)]
    async with AsyncExitStack() as stack:
        # Recorders sharing a store share their pinned server keys: they front one CRM's replicas.
        commands = [recorder_command(workdir, name, url, crm_name=f"crm-{tag}") for name in names]
        clients = [await stack.enter_async_context(client(command, workdir)) for command in commands]
        for connected in clients:  # unmeasured: the first call of each pays for its imports
            await write(connected, 0)

        async def agent(connected: Any) -> None:
            for n in range(1, each + 1):
                await write(connected, n)

        start = time.perf_counter()
        await asyncio.gather(*(agent(connected) for connected in clients))
        elapsed = time.perf_counter() - start
    return recorders * each / elapsed, check_records(workdir, url, names, each + 1)


async def write(connected: Any, n: int) -> None:
    """One recorded write; it must have gone through."""
    result = await connected.call_tool_mcp("crm_update_deal", {"deal_id": DEAL, "stage": STAGES[n % 2]})
    if result.is_error or (result.structured_content or {}).get("status") == "pending_approval":
        raise SystemExit(f"a write did not go through: {result.content}")


def check_records(workdir: Path, url: str, names: Sequence[str], per_recorder: int) -> str:
    """Every Recorder's run holds every call, and every record verifies with its pinned keys."""
    keys = [SigningKey.from_file(workdir / f"{name}.key") for name in names]
    store = RunStore(url, keys[0])
    try:
        runs = store.runs()
        if len(runs) != len(names):
            raise SystemExit(f"{len(runs)} runs in the store, want {len(names)}")
        recorder_keys = {key.public.kid: key.public for key in keys}
        for run in runs:
            size = len(store.entries(run.id))
            report = verify_record(store.export(run.id).to_bytes(), recorder_keys=recorder_keys)
            if size != per_recorder or not report.ok:
                raise SystemExit(f"run {run.id}: {size} entries (want {per_recorder}), verifies: {report.ok}")
    finally:
        store.dispose()
    return "every record verifies"


def cluster_if_installed() -> ThrowawayCluster | None:
    """A durable throwaway PostgreSQL cluster, or None without PostgreSQL's programs."""
    if find_postgres() is None:
        say("PostgreSQL is not installed (make postgresql): measuring SQLite only")
        return None
    binaries, user = require_postgres()
    cluster = ThrowawayCluster(binaries, user, durable=True)
    cluster.start()
    return cluster


def interleaved(
    sizes: Sequence[int], backends: Backends, measure: Callable[[str, int], Any]
) -> dict[tuple[str, int], Any]:
    """``measure(backend, size)`` for every pair, the backends alternating at each size."""
    results = {}
    for size in sizes:
        for backend in backends.names:
            say(f"  {backend}, {size} ...")
            results[(backend, size)] = measure(backend, size)
    return results


def table(
    title: str, unit: str, sizes: Sequence[int], backends: Backends, results: dict[tuple[str, int], Any]
) -> list[str]:
    header = f"  {title:<22}" + "".join(f"{name:>16}" for name in backends.names)
    lines = [header]
    for size in sizes:
        cells = "".join(f"{results[(name, size)][0]:>12,.0f} {unit}" for name in backends.names)
        lines.append(f"  {size:<22}{cells}")
    notes = sorted({f"{name}: {results[(name, size)][1]}" for name in backends.names for size in sizes})
    return [*lines, f"  ({'; '.join(notes)})"]


def bench(args: argparse.Namespace, workdir: Path) -> None:
    cluster = cluster_if_installed()
    try:
        backends = Backends(workdir, cluster)
        say(f"appends: {args.appends} per writer")
        appended = interleaved(
            WRITERS,
            backends,
            lambda backend, writers: _forks_as_text(
                asyncio.run(appends(backends.fresh(backend), writers, args.appends))
            ),
        )
        say(f"calls: {args.calls} writes per Recorder process")
        called = interleaved(
            RECORDERS,
            backends,
            lambda backend, recorders: asyncio.run(
                calls(workdir, backends.fresh(backend), recorders, args.calls, f"{backend}-{recorders}")
            ),
        )
    finally:
        if cluster is not None:
            cluster.stop()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    lines = [
        f"store scale, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min)",
        "",
        "Appends per second, concurrent writers in one process (RunStore.append_async):",
        *table("writers", "/s", WRITERS, backends, appended),
        "",
        "Recorded calls per second, Recorder processes on one store (one agent each, one CRM's replicas):",
        *table("Recorder processes", "/s", RECORDERS, backends, called),
    ]
    if cluster is None:
        lines.append("(PostgreSQL is not installed here: its column was left out)")
    print("\n".join(lines))


def _forks_as_text(measured: tuple[float, int]) -> tuple[float, str]:
    rate, forks = measured
    return rate, f"{forks} forks"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--appends", type=int, default=250, help="entries each writer appends (default 250)")
    parser.add_argument("--calls", type=int, default=200, help="writes through each Recorder (default 200)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the SQLite files go (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="store-scale-", dir=args.dir) as workdir:
        bench(args, Path(workdir))


if __name__ == "__main__":
    main()
