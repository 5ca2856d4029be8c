"""Hostile stored entries at scale: the CI fuzz property of tests/recorder/test_stored_entries_fuzz.py
run with many more runs, its outcomes counted.

Each run holds 32-72 entries (``--entries``; CI 8-24) of any kind written straight into a real SQLite
Run Store (members dropped, of the wrong type, extreme dates, sizes and nesting); ``show``, ``plan``,
``approve``, ``deny``, the approver's pages of the run and a live agent's calls read it, and ``asks``,
``runs`` and ``tick`` read each store of 5 runs (``--per-store``; CI 10). ``python
bench/stored_entries.py`` (250 runs, over 10^4 entries; about 12 minutes on 2 busy CPUs) or
``--runs N``. Prints the entries by kind, every reader's outcomes, and the tracebacks (0 expected);
exits non-zero if any invariant broke.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPERTY = (
    "tests/recorder/test_stored_entries_fuzz.py::"
    "test_hostile_stored_entries_never_crash_a_reader_and_each_odd_entry_is_named"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=250, help="hostile runs")
    parser.add_argument("--entries", default="32-72", help="entries of each run, fewest-most (CI: 8-24)")
    parser.add_argument("--per-store", type=int, default=5, help="runs per store and per agent (CI: 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tally = Path(folder) / "tally.jsonl"
        env = {
            **os.environ,
            "HATP_STORED_RUNS": str(args.runs),
            "HATP_STORED_ENTRIES": args.entries,
            "HATP_STORED_RUNS_PER_STORE": str(args.per_store),
            "HATP_FUZZ_TALLY": str(tally),
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", PROPERTY]
        status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        lines = [json.loads(line) for line in tally.read_text().splitlines()] if tally.exists() else []
    if not lines:
        print("no tally: the property did not finish (pytest's report above says why)")
        return status or 1
    counts = lines[-1]
    entries = counts["entries"]
    print(f"hostile runs: {counts['runs']}, stored entries: {sum(entries.values())}")
    print("entries by kind: " + ", ".join(f"{kind} {n}" for kind, n in sorted(entries.items())))
    print("outcomes by reader:")
    for outcome, n in sorted(counts["outcomes"].items()):
        print(f"  {outcome}: {n}")
    print("seconds by reader: " + ", ".join(f"{r} {s}" for r, s in counts.get("seconds", {}).items()))
    print(f"tracebacks: {counts['tracebacks']}, odd entries not named: {counts['unnamed']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
