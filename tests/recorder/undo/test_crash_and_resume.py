"""A Recorder killed with SIGKILL at random points of an undo, then resumed, many times over.

After every trial: no token was compensated twice (the server's own log of committed
compensations), no outside edit was overwritten, no step conflicted without an outside edit,
and the exported Run Record verifies.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from chain_server import outside_edit, undo_log, values
from undo_org import LEE, Org

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("HATP_CRASH_SEED", random.randrange(2**32)))
UNDO_KINDS = ("decision", "undo-intent", "undo-outcome")


def spawn(org: Org, *arguments: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "hatp_journal.recorder.cli", "--config", str(org.config), *arguments]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def progress(org: Org, run: str) -> int:
    return sum(e.kind in UNDO_KINDS for e in org.entries(run))


def kill_after(org: Org, run: str, process: subprocess.Popen[bytes], target: int) -> bool:
    """SIGKILL ``process`` once the record holds ``target`` undo entries; False if it finished first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if progress(org, run) >= target:
            process.send_signal(signal.SIGKILL)
            process.wait()
            return True
        time.sleep(0.002)
    process.kill()
    raise AssertionError("the undo made no progress within 60 s")


def test_undo_killed_at_random_points_and_resumed_compensates_nothing_twice(org: Org) -> None:
    rng = random.Random(SEED)
    for trial in range(2):
        keys = [f"t{trial}-{name}" for name in ("a", "b", "c", "d")]
        a, b, c, d = keys
        calls = [
            ("chain_put", {"key": a, "value": "1"}),
            ("chain_put", {"key": b, "value": "1"}),
            ("chain_put", {"key": a, "value": "2"}),
            ("chain_attach", {"key": c, "target": b}),
            ("chain_put", {"key": d, "value": "1"}),
            ("chain_put", {"key": a, "value": "3"}),
            ("chain_put", {"key": d, "value": "2"}),
            ("chain_put", {"key": b, "value": "2"}),
        ]
        run = org.agent(calls)
        ref, _ = org.plan(run, "--from", "1")
        edited: dict[str, str] = {}
        process = spawn(org, "approve", ref, "--as", LEE, "--key", org.key(LEE))
        for kill in range(5):
            # 1 + 2 entries per step: a kill can land anywhere from the approval to the last outcome.
            target = max(1, progress(org, run) + rng.randint(0, 4))  # from the approval on
            if not kill_after(org, run, process, target):
                break
            if rng.random() < 0.5 and progress(org, run) > 1:
                key = rng.choice(keys)
                if key in values(org.db()):
                    edited[key] = f"edited-by-eve-{kill}"
                    outside_edit(org.db(), key, edited[key], by="eve")
            process = spawn(org, "undo", ref)
        process.wait(timeout=60)
        code, out, err = org.cli("undo", ref)  # idempotent: resumes, or reports the finished record
        context = f"seed {SEED}, trial {trial}: {out} {err}"

        assert code in (0, 1), context
        twice = [token for token, n in Counter(undo_log(org.db())).items() if n > 1]
        assert not twice, f"compensated twice: {twice} ({context})"
        now = values(org.db())
        for key, value in edited.items():
            assert now.get(key) == value, f"{key} was overwritten ({context})"
        statuses = org.reversal(run)
        by_entry = {e.id: e for e in org.entries(run)}
        for entry, status in statuses.items():
            key = by_entry[entry].body["arguments"]["key"]
            if status == "conflicted":
                assert key in edited, f"{entry} conflicted without an outside edit ({context})"
            if key not in edited and status != "skipped":
                assert status == "reversed", f"{entry} ended {status} ({context})"
        untouched = [k for k in keys if k not in edited]
        assert not [k for k in untouched if k in now and not _relied_on(k, edited, calls)], context
        report = org.verify(run)
        assert report.ok, f"{report.problems} ({context})"


def _relied_on(key: str, edited: dict[str, str], calls: list[tuple[str, dict[str, str]]]) -> bool:
    """Whether ``key`` may legitimately stay: an edited key's step relied on it (attach target)."""
    return any(
        call[0] == "chain_attach" and call[1]["target"] == key and call[1]["key"] in edited for call in calls
    )
