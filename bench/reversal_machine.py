"""The reversal state machine (tests/recorder/undo/test_reversal_state_machine.py) for many random
examples: agent calls, Eve's outside edits, held publishes and approvals, clock moves, and undos
that conflict, override and crash, every invariant checked after every step.

    .venv/bin/python bench/reversal_machine.py --examples 500            # about 20 min on a quiet machine
    .venv/bin/python bench/reversal_machine.py --examples 40 --steps 40  # longer runs, a few minutes

Prints how many examples ran, in how long, and how often each path was reached (undos, conflicts
planned, conflicts overridden, crashes before and after the server compensated, approved publishes,
approvals after their deadline). CI runs 8 random examples and one fixed story through every path.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "recorder" / "undo"))

import test_reversal_state_machine as machine  # noqa: E402 - beside the tests
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--steps", type=int, default=25, help="rules per example, at most")
    parser.add_argument("--seed", type=int, default=None, help="derandomize with this seed")
    options = parser.parse_args()
    examples = [0]

    class Counted(machine.UndoMachine):
        def __init__(self) -> None:
            examples[0] += 1
            super().__init__()

    started = time.perf_counter()
    ended = "all ran, no invariant broken"
    try:
        run_state_machine_as_test(
            Counted,
            settings=settings(
                max_examples=options.examples,
                stateful_step_count=options.steps,
                deadline=None,
                database=None,
                derandomize=options.seed is not None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    except KeyboardInterrupt:  # Ctrl-C or `timeout -s INT`: say what ran so far
        ended = "interrupted"
    except AssertionError as broken:  # Hypothesis has shrunk it: the failing steps are printed above
        ended = f"an invariant broke: {broken}"
    took = time.perf_counter() - started
    load = " / ".join(f"{n:.1f}" for n in os.getloadavg())
    ran = f"{examples[0]} machines (examples, and any replays) of at most {options.steps} rules"
    print(f"{ran} in {took:.0f} s: {ended}")
    print(f"  load average at the end (1 / 5 / 15 min): {load}")
    for path, count in sorted(machine.REACHED.items()):
        print(f"  {path}: {count}")
    sys.exit(0 if ended.startswith("all ran") else 1)


if __name__ == "__main__":
    main()
