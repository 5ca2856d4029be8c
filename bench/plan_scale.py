"""Planning the undo of a long run: how the planner grows with the run (issue 14, item 3).

Each run is built in a temporary SQLite store as the gateway journals it: verified ``call`` entries
of a journal-aware server, each resource written three times in a row (created, then edited twice,
each write declaring that it used the resource's previous version, so the writes link into chains),
and every tenth call a read. Then the undo of the whole run (``from 1``) is planned with
``build_plan``, as ``hatp-recorder plan`` does, twice per size:

- **planner alone**: ``check`` answers at once, from a model of the server (a resource is at the
  version its last write left, so every earlier write of a chain answers ``conflict`` and is the
  run's own doing). This is the planner's own work: reading the record, links, closure, chains,
  sections, readSince.
- **with checks that take time**: the same, each ``check`` waiting ``--check-ms`` (a server's
  round trip, as an ``asyncio`` sleep) — this shows whether checks run one after another or
  together (bounded per server).

Run: ``.venv/bin/python bench/plan_scale.py [--sizes 1000 3000 10000 30000]`` or ``make bench-plan``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verify_scale import fast_store  # a sibling script: bench/ is on the path

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.changes.links import LinkedCall, LinkIndex
from hatp_journal.recorder.changes.steps import Step
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.undo import ReversalPlan, UndoRequest, build_plan
from hatp_journal.toolkit import SigningKey

TARGET_S = 1.0
"""Issue 14: planning the undo of a 10k-entry run, the planner alone, takes under this long."""
TARGET_SIZE = 10_000
CHAIN = 3
"""Writes per resource: a create and two edits."""
READ_EVERY = 10
SERVER = "crm"


def call_body(n: int, version_of: dict[str, str], index: LinkIndex) -> dict[str, Any]:
    """The ``n``-th call as the gateway journals it: a verified write (or read) with its links."""
    if n % READ_EVERY == 0:
        deal = f"D-{max(1, (n - 1) // CHAIN)}"
        journal: dict[str, Any] = {  # a read as the wire has it: ``read``, no undo terms
            "server": SERVER,
            "read": True,
            "effect": {"summary": f"Read deal {deal}", "resource": f"crm://acme/deal/{deal}"},
        }
        kind, tool, arguments = "read", "get_deal", {"deal_id": deal}
    else:
        deal = f"D-{n // CHAIN}"
        resource = f"crm://acme/deal/{deal}"
        before = version_of.get(resource)
        version = f"v{n}"
        version_of[resource] = version
        effect: dict[str, Any] = {
            "summary": f"Deal {deal} stage: Proposal → Won" if before else f"Create deal {deal}",
            "resource": resource,
            "version": version,
            "uses": [{"resource": resource, "version": before}] if before else [],
        }
        if before:
            effect["before"] = before
        journal = {
            "server": SERVER,
            "compensationTokenDigest": sha256_digest({"token": n}),
            "undo": {"kind": "compensate", "undoBy": "2099-01-01T00:00:00Z", "via": "api", "sideEffects": []},
            "effect": effect,
        }
        kind, tool, arguments = "compensate", "update_deal", {"deal_id": deal, "stage": "Won"}
    body: dict[str, Any] = {
        "server": SERVER,
        "tool": tool,
        "arguments": arguments,
        "agent": "sales-bot",
        "principal": "human://acme.com/dana",
        "declared": kind,
        "decision": {"action": "allow", "policyDigest": "sha256:" + "0" * 64},
        "intake": {"status": "verified", "kind": kind},
        "journal": journal,
        "outcome": {"status": "ok"},
    }
    body["links"] = index.links(LinkedCall.of(body))
    return body


def build(path: Path, size: int) -> tuple[RunStore, str, dict[str, str]]:
    """A run of ``size`` call entries: (the store, the run id, each resource's version now)."""
    store = fast_store(path, SigningKey.generate())
    run = store.open_run(agent="sales-bot", principal="human://acme.com/dana")
    version_of: dict[str, str] = {}
    index = LinkIndex()
    started = time.perf_counter()
    for n in range(1, size + 1):
        entry = store.append(run.id, "call", call_body(n, version_of, index))
        index.add(entry.id, LinkedCall.of(entry.body))
        if n % max(1, size // 10) == 0:
            print(
                f"\r  building {size} entries: {n * 100 // size}%, {time.perf_counter() - started:.0f} s",
                end="",
                file=sys.stderr,
            )
    print(file=sys.stderr)
    return store, run.id, version_of


@dataclass(frozen=True)
class Planned:
    """One planning's timings and plan. Its repr is short: ``asyncio.run`` on Python 3.11 formats
    its main task's result when it restores the Ctrl-C handler, which for a plan of 30k steps
    took seconds (outside the timing, yet inside the bench's run)."""

    seconds: float
    cpu: float
    plan: ReversalPlan

    def __repr__(self) -> str:
        return f"Planned({len(self.plan.steps)} steps, {self.seconds:.2f} s)"


async def plan(store: RunStore, run_id: str, version_of: dict[str, str], check_ms: float) -> Planned:
    """Plan undoing the whole run: how long it took (wall clock, this process's CPU) and the plan."""

    async def check(step: Step) -> dict[str, Any]:
        if check_ms:
            await asyncio.sleep(check_ms / 1000)
        now = version_of[step.resource or ""]
        answer = {  # a check answer as the wire has it (unsigned: the bench has no server keys)
            "server": SERVER,
            "operation": "check",
            "tokenDigest": step.token_digest,
            "at": "2026-12-03T00:00:00Z",
            "versionFound": now,
        }
        if now == step.version:
            return {**answer, "status": "ok"}
        return {**answer, "status": "conflict", "versionExpected": step.version, "message": "changed"}

    started, cpu = time.perf_counter(), time.process_time()
    planned = await build_plan(
        store,
        run_id,
        UndoRequest(from_step=1),
        requested_by="human://acme.com/dana",
        undo_authority="human://acme.com/role/team-lead",
        check=check,
        now=datetime(2026, 12, 3, tzinfo=UTC),
    )
    return Planned(time.perf_counter() - started, time.process_time() - cpu, planned.plan)


def bench(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for size in args.sizes:
        store, run_id, version_of = build(workdir / f"{size}.db", size)
        started = time.perf_counter()
        store.entries(run_id)
        read_s = time.perf_counter() - started
        print(f"  {size} entries: planning, planner alone ...", file=sys.stderr)
        planned = asyncio.run(plan(store, run_id, version_of, 0))
        alone, cpu, shown = planned.seconds, planned.cpu, planned.plan
        writes = size - size // READ_EVERY
        if len(shown.steps) != writes:  # a bench whose bodies no longer fit would time a plan of nothing
            raise SystemExit(f"{size} entries: planned {len(shown.steps)} steps, not every write ({writes})")
        row: dict[str, Any] = {"entries": size, "read": read_s, "alone": alone, "steps": len(shown.steps)}
        row["cpu"] = cpu
        row["conflicts"] = len(shown.conflicts)
        if args.check_ms and size <= args.checked_up_to:
            print(f"  {size} entries: planning, each check {args.check_ms} ms ...", file=sys.stderr)
            row["checked"] = asyncio.run(plan(store, run_id, version_of, args.check_ms)).seconds
        store.dispose()
        rows.append(row)
        print(f"  {size} entries: planner alone {alone:.2f} s", file=sys.stderr)
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"Planning an undo at scale — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"{platform.python_implementation()} {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"each resource written {CHAIN} times in a row, a read every {READ_EVERY} calls; undo from step 1",
        "",
        f"{'entries':>8}{'planned':>9}{'conflicts':>11}{'read s':>9}{'planner s':>11}{'CPU s':>8}"
        f"{'µs/entry':>10}"
        f"{'with checks s':>15}",
    ]
    for row in rows:
        checked = f"{row['checked']:>15.2f}" if "checked" in row else f"{'-':>15}"
        lines.append(
            f"{row['entries']:>8}{row['steps']:>9}{row['conflicts']:>11}{row['read']:>9.2f}"
            f"{row['alone']:>11.2f}{row['cpu']:>8.2f}{row['alone'] / row['entries'] * 1e6:>10.0f}{checked}"
        )
    lines.append("  read s: reading the run's entries alone (RunStore.entries), for comparison")
    lines.append(
        "  planner s: build_plan with checks that answer at once, reading the record included (wall clock);"
        " CPU s: this process's CPU time for it (less swayed by other work on the machine)"
    )
    if args.check_ms:
        lines.append(f"  with checks s: each check waits {args.check_ms} ms, as a server's round trip would")
    growth = [
        f"{b['entries'] / a['entries']:.0f}x entries: {b['alone'] / a['alone']:.1f}x wall, "
        f"{b['cpu'] / max(a['cpu'], 1e-9):.1f}x CPU"
        for a, b in itertools.pairwise(rows)
    ]
    if growth:
        lines.append("growth: " + "; ".join(growth))
    target = next((row for row in rows if row["entries"] == TARGET_SIZE), None)
    if target is not None:
        met = "met" if target["alone"] < TARGET_S else "NOT met on the wall clock"
        lines.append(
            f"target (issue 14): {TARGET_SIZE} entries planned in < {TARGET_S} s: "
            f"{target['alone']:.2f} s wall ({target['cpu']:.2f} s CPU), {met}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10_000, 30_000])
    parser.add_argument("--check-ms", type=float, default=5.0, help="how long each check waits (0: skip)")
    parser.add_argument(
        "--checked-up-to", type=int, default=10_000, help="plan with slow checks only up to this size"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="plan-scale-", dir=args.dir) as workdir:
        rows = bench(args, Path(workdir))
    print(table(rows, args))


if __name__ == "__main__":
    main()
