"""CPU per Run Record append, alone: ``RunStore.append`` of a call-shaped entry, on tmpfs.

Every recorded call waits for one append, but its cost (tens of microseconds) drowns in the noise
of a whole call (``bench/recorder_overhead.py``). This measures it alone: one entry body as the
gateway journals a verified write (the d881 example's first call), half of the appends keeping a
compensation token, a checkpoint every 100, the store on tmpfs so that no fsync is counted. With
``--baseline PYTHON`` another checkout's store (the python of its venv) is measured too, the two
alternating round by round so that machine noise hits both alike.

Run: ``.venv/bin/python bench/append_cost.py [--appends N] [--baseline ../main/.venv/bin/python]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY_DISK = Path("/dev/shm")

ROUND = """
import json, sys, tempfile, time
from pathlib import Path
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey

record = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
body = next(entry["body"] for entry in record["entries"] if entry["kind"] == "call")
appends = int(sys.argv[3])
with tempfile.TemporaryDirectory(dir=sys.argv[2]) as folder:
    store = RunStore(Path(folder) / "record.db", SigningKey.generate(), checkpoint_every=100)
    run = store.open_run(agent="sales-bot", principal="dana").id
    for n in range(100):  # warm-up
        store.append(run, "call", body)
    start = time.process_time()
    for n in range(appends):
        store.append(run, "call", body, tokens=[(f"digest-{n}", "crm", "token")] if n % 2 else ())
    spent = time.process_time() - start
    store.dispose()
print(spent / appends * 1e6)
"""
"""One round in a fresh process: microseconds of CPU per append."""


def one_round(python: str, appends: int) -> float:
    example = ROOT / "docs" / "examples" / "d881" / "run-record.json"
    folder = MEMORY_DISK if MEMORY_DISK.is_dir() else Path(tempfile.gettempdir())
    done = subprocess.run(
        [python, "-c", ROUND, str(example), str(folder), str(appends)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--appends", type=int, default=3000, help="appends per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per checkout, alternating")
    parser.add_argument("--baseline", help="the python of another checkout's venv, measured alongside")
    args = parser.parse_args()
    pythons = {"this checkout": sys.executable}
    if args.baseline:
        pythons["baseline"] = args.baseline
    spent: dict[str, list[float]] = {name: [] for name in pythons}
    for _ in range(args.rounds):
        for name, python in pythons.items():
            spent[name].append(one_round(python, args.appends))
    print(f"CPU per Run Record append, {args.appends} appends x {args.rounds} rounds, store on tmpfs")
    print(f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    for name, samples in spent.items():
        spread = f"{min(samples):.1f}-{max(samples):.1f}"
        print(f"  {name:<14} median {statistics.median(samples):6.1f} us  (rounds: {spread})")


if __name__ == "__main__":
    main()
