"""The host-undo state machines (tests/third_party/graph_machine.py, files_machine.py) for many
examples: a real server that knows nothing of undo behind the Recorder (the knowledge-graph server,
or the filesystem server), agent calls, a colleague's direct edits, no-op calls, reads, undo plans,
approvals and overrides, every invariant checked after every undo.

    .venv/bin/python bench/host_undo_machine.py --examples 2000 --steps 12
    .venv/bin/python bench/host_undo_machine.py --server files --examples 2000 --steps 12
    timeout -s INT 1800 .venv/bin/python bench/host_undo_machine.py --server files   # what 30 min do

Prints how many examples ran, in how long, and what they exercised (undos, overrides, colleague
changes removed under an override, no-op calls seen). Needs the third-party servers (make setup).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "third_party"))

import files_machine  # noqa: E402 - beside the tests
import graph_machine  # noqa: E402
from anyio.from_thread import start_blocking_portal  # noqa: E402
from host_undo_org import HostOrg  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

BIN = ROOT / "third_party" / "node_modules" / ".bin"
COMMANDS = {"graph": BIN / "mcp-server-memory", "files": BIN / "mcp-server-filesystem"}


def machine_for(server: str, root: Path, portal: Any) -> tuple[Any, Any]:
    """The state machine for ``server``, pointed at a fresh org in ``root``, and what ends its session."""
    if server == "graph":
        memory = root / "memory.jsonl"
        org = HostOrg.make(
            root, graph_machine.memory_servers(COMMANDS[server], memory), graph_machine.memory_policy()
        )
        return graph_machine.GraphMachine, graph_machine.configure(org, memory, portal)
    folder = root / "files"
    folder.mkdir()
    org = HostOrg.make(
        root, files_machine.files_servers(COMMANDS[server], folder), files_machine.files_policy()
    )
    return files_machine.FilesMachine, files_machine.configure(org, folder, portal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=sorted(COMMANDS), default="graph")
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=12, help="rules per example")
    parser.add_argument("--seed", type=int, default=None, help="derandomize with this seed")
    parser.add_argument("--progress", type=float, default=60, help="seconds between progress lines")
    options = parser.parse_args()
    if not COMMANDS[options.server].exists():
        sys.exit(f"{COMMANDS[options.server]} is missing: run make setup")
    with tempfile.TemporaryDirectory() as folder, start_blocking_portal() as portal:
        machine, end = machine_for(options.server, Path(folder), portal)
        started = time.perf_counter()
        progress(options, machine.stats, started)
        try:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=options.examples,
                    stateful_step_count=options.steps,
                    deadline=None,
                    database=None,
                    derandomize=options.seed is not None,
                    suppress_health_check=list(HealthCheck),
                ),
            )
            ended = "all ran"
        except KeyboardInterrupt:  # Ctrl-C or `timeout -s INT`: say what ran so far
            ended = "interrupted"
        report(options, machine.stats, time.perf_counter() - started, ended)
        if ended == "interrupted":  # the example cut short still holds its session: leave at once
            os._exit(130)
        end()


def progress(options: argparse.Namespace, stats: dict[str, int], started: float) -> None:
    """A line every ``--progress`` seconds: examples and undos so far, and the machine's load."""

    def tell() -> None:
        while True:
            time.sleep(options.progress)
            took = time.perf_counter() - started
            print(
                f"{options.server}: {stats.get('examples started', 0)} examples, {stats.get('undos', 0)}"
                f" undos after {took:.0f} s (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )

    threading.Thread(target=tell, daemon=True).start()


def report(options: argparse.Namespace, stats: dict[str, int], took: float, ended: str) -> None:
    examples = stats.get("examples started", 0)
    load = " / ".join(f"{n:.1f}" for n in os.getloadavg())
    print(f"{options.server}: {examples} examples of at most {options.steps} rules in {took:.0f} s ({ended})")
    print(f"  load average at the end (1 / 5 / 15 min): {load}")
    for what, count in sorted(stats.items()):
        print(f"  {what}: {count}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
