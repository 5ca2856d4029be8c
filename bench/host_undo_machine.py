"""The host-undo state machines (tests/third_party/graph_machine.py, files_machine.py) for many
examples: a real server that knows nothing of undo behind the Recorder (the knowledge-graph server,
or the filesystem server), agent calls, a colleague's direct edits, no-op calls, reads, undo plans,
approvals and overrides, every invariant checked after every undo.

    .venv/bin/python bench/host_undo_machine.py --examples 2000 --steps 12
    .venv/bin/python bench/host_undo_machine.py --server files --examples 2000 --steps 12
    timeout -s INT 1800 .venv/bin/python bench/host_undo_machine.py --server files   # what 30 min do

Prints how many examples ran, in how long, and what they exercised (undos, overrides, colleague
changes removed under an override, no-op calls seen), the seed it ran (``--seed N`` runs the same
examples again) and a digest of the rules that ran, in order. Needs the third-party servers (make setup).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import random
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
from hypothesis import HealthCheck, seed, settings  # noqa: E402
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
    parser.add_argument("--seed", type=int, default=None, help="run this seed's examples (default: new)")
    parser.add_argument("--progress", type=float, default=60, help="seconds between progress lines")
    options = parser.parse_args()
    if options.seed is None:
        options.seed = random.randrange(2**32)  # chosen here so that the report can name it
    if not COMMANDS[options.server].exists():
        sys.exit(f"{COMMANDS[options.server]} is missing: run make setup")
    with tempfile.TemporaryDirectory() as folder, start_blocking_portal() as portal:
        machine, end = machine_for(options.server, Path(folder), portal)
        machine, ran = seeded(machine, options.seed)
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
                    derandomize=False,  # the seed decides the examples
                    suppress_health_check=list(HealthCheck),
                ),
            )
            ended = "all ran"
        except KeyboardInterrupt:  # Ctrl-C or `timeout -s INT`: say what ran so far
            ended = "interrupted"
        report(options, machine.stats, time.perf_counter() - started, ended)
        print(f"  seed {options.seed} (the same examples again: --seed {options.seed})")
        digest = hashlib.sha256("\n".join(ran).encode()).hexdigest()
        print(f"  rules run: {len(ran)}, their names in order sha256:{digest}")
        sys.stdout.flush()
        if ended == "interrupted":  # the example cut short still holds its session: leave at once
            os._exit(130)
        end()


def seeded(machine: Any, chosen: int) -> tuple[Any, list[str]]:
    """``machine`` under Hypothesis's ``@seed(chosen)`` (a subclass: the class itself is left as it
    is), and the list each rule's name is added to as the rule runs (every example, in order)."""
    ran: list[str] = []
    replayed = seed(chosen)(type(machine.__name__, (machine,), {}))
    rules = replayed.setup_state().rules
    for index, rule in enumerate(rules):
        rules[index] = copy.copy(rule)
        rules[index].function = _noted(rule.function, ran)
    return replayed, ran


def _noted(function: Any, ran: list[str]) -> Any:
    """``function`` (a rule), adding its name to ``ran`` each time it runs."""

    def noted(machine: Any, **arguments: Any) -> Any:
        ran.append(function.__name__)
        return function(machine, **arguments)

    noted.__name__ = noted.__qualname__ = function.__name__
    return noted


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
