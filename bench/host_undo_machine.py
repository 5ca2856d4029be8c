"""The host-undo state machine (tests/third_party/graph_machine.py) for many examples: the real
knowledge-graph server behind the Recorder, agent calls, a colleague's direct edits, no-op calls,
reads, undo plans, approvals and overrides, every invariant checked after every undo.

    .venv/bin/python bench/host_undo_machine.py --examples 2000 --steps 12

Prints how many examples ran, in how long, and what they exercised (undos, overrides, colleague
changes removed under an override, no-op calls seen). Needs the third-party servers (make setup).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "third_party"))

from anyio.from_thread import start_blocking_portal  # noqa: E402
from graph_machine import GraphMachine, configure, memory_policy, memory_servers  # noqa: E402 - beside the tests
from host_undo_org import HostOrg  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

COMMAND = ROOT / "third_party" / "node_modules" / ".bin" / "mcp-server-memory"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=12, help="rules per example")
    parser.add_argument("--seed", type=int, default=None, help="derandomize with this seed")
    options = parser.parse_args()
    if not COMMAND.exists():
        sys.exit(f"{COMMAND} is missing: run make setup")
    with tempfile.TemporaryDirectory() as folder, start_blocking_portal() as portal:
        root = Path(folder)
        memory = root / "memory.jsonl"
        org = HostOrg.make(root, memory_servers(COMMAND, memory), memory_policy())
        configure(org, memory, portal)
        started = time.perf_counter()
        run_state_machine_as_test(
            GraphMachine,
            settings=settings(
                max_examples=options.examples,
                stateful_step_count=options.steps,
                deadline=None,
                database=None,
                derandomize=options.seed is not None,
                suppress_health_check=list(HealthCheck),
            ),
        )
        took = time.perf_counter() - started
    print(f"{options.examples} examples of at most {options.steps} rules in {took:.0f} s")
    for what, count in sorted(GraphMachine.stats.items()):
        print(f"  {what}: {count}")


if __name__ == "__main__":
    main()
