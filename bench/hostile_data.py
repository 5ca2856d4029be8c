"""Hostile data at scale: the CI fuzz properties run with a long profile, with counts printed.

Two properties of the test suite, each run with many more examples than CI gives them:

- ``tests/recorder/test_hostile_signed_data_fuzz.py``: closed runs in real SQLite stores, each a
  genuine call and 8-14 journal objects signed with a real Ed25519 key holding hostile values (bad
  times, ``…Z\\n`` included; wrong types; unknown members), signed check answers and undo answers,
  all stored and read back: planned, shown line by line, rendered as the review page, exported and
  ticked over. Invariants: nothing raises; every misfit is ``unresolved`` or has its documented code
  (``JOURNAL_UNREADABLE``, ``CHECK_ANSWER_UNREADABLE``, ``BODY_UNREADABLE``); no token in any export;
  a genuine run beside them gets its review and reminder, once.
- ``tests/recorder/test_intake_fuzz.py``: results with the server's real token planted anywhere (a
  member of any object or array, the journal object wrapped in a list or nested elsewhere).
  Invariants: the token never reaches the recorded members nor the agent's answer; a result with it
  out of place is ``BAD_JOURNAL``; the verifier's token search finds none, an agent's own
  ``compensationToken`` argument included.

``python bench/hostile_data.py`` (600 runs, over 10,000 signed objects, and 10,000 results; a few
minutes on 2 CPUs), or ``--runs N --results N``. Exits non-zero if any invariant broke (pytest's
report says which, with the example).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = [
    "tests/recorder/test_hostile_signed_data_fuzz.py::test_signed_hostile_objects_never_crash_plan_show_review_or_tick",
    "tests/recorder/test_intake_fuzz.py::test_a_token_planted_anywhere_in_a_result_reaches_neither_the_record_nor_the_agent",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=600, help="hostile runs (about 21 signed objects each)")
    parser.add_argument("--results", type=int, default=10_000, help="results with a token planted")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tally = Path(folder) / "tally.jsonl"
        env = {
            **os.environ,
            "HATP_HOSTILE_RUNS": str(args.runs),
            "HATP_FUZZ_TOKEN_RESULTS": str(args.results),
            "HATP_FUZZ_TALLY": str(tally),
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", *PROPERTIES]
        status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        lines = [json.loads(line) for line in tally.read_text().splitlines()] if tally.exists() else []
    signed = next((line for line in lines if "objects" in line), {})
    results = Counter((line["how"], line["code"]) for line in lines if "how" in line)
    print(
        f"hostile runs: {signed.get('runs', 0)}, signed objects (journal objects, check and undo answers): "
        f"{signed.get('objects', 0)}"
    )
    for kind in ("fits", "unresolved", "unreadable", "check answer broken", "undo answer broken"):
        print(f"  {kind}: {signed.get(kind, 0)}")
    print(f"results with a token planted: {sum(results.values())}")
    for (how, code), count in sorted(results.items()):
        print(f"  {how}: {code} {count}")
    print(
        f"tracebacks, tokens in a record or answer, undocumented codes: {'0' if status == 0 else 'SEE ABOVE'}"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
