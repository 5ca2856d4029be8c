"""An undo whose Recorder, tool server, or both are killed with SIGKILL at random points, then
resumed, several times over: up to five kills in one undo (``HATP_CRASH_TRIALS`` undos of a run, one
in CI; bench/crash_trials.py runs hundreds of such trials against the demo servers).

A kill lands once the record holds a random number of undo entries: the harness waits on the
record's progress, never on the clock, so a loaded machine only makes the trials slower. A killed
server is the Recorder's stdio child; the Recorder sees its connection close, and the resume
(``hatp-recorder undo REF``) starts it again and retries the step under the same approval.

After every trial: no token was compensated twice (the server's own log of committed
compensations), no outside edit was overwritten, no step conflicted without an outside edit,
every step not edited from outside ended reversed, and the exported Run Record verifies.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from support.chain_server import outside_edit, undo_log, values
from support.undo_org import LEE, Org
from support.waiting import wait_until

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("HATP_CRASH_SEED", random.randrange(2**32)))
TRIALS = int(os.environ.get("HATP_CRASH_TRIALS", "1"))
UNDO_KINDS = ("decision", "undo-intent", "undo-outcome")
VICTIMS = ("both", "recorder", "server")
"""In the order of a trial's first kills: the first always takes a server down too."""


def spawn(org: Org, *arguments: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "hatp_journal.recorder.cli.command_line",
        "--config",
        str(org.config),
        *arguments,
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def progress(org: Org, run: str) -> int:
    return sum(e.kind in UNDO_KINDS for e in org.entries(run))


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (its stdio tool servers), from Linux's /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in task.read_text().split()]
    return found


def kill_after(org: Org, run: str, process: subprocess.Popen[bytes], target: int, victim: str) -> bool:
    """SIGKILL the Recorder, its tool server, or both, once the record holds ``target`` undo
    entries; False if the undo finished first. Waits on the record, not on a deadline."""
    wait_until(
        lambda: process.poll() is not None or progress(org, run) >= target,
        f"{target} undo entries or the undo's end",
        every=0.005,
    )
    if process.poll() is not None:
        return False
    if victim in ("server", "both"):
        for pid in children(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if victim in ("recorder", "both"):
        process.send_signal(signal.SIGKILL)
    return True


def test_undo_killed_at_random_points_and_resumed_compensates_nothing_twice(org: Org) -> None:
    rng = random.Random(SEED)
    kills: Counter[str] = Counter()
    for trial in range(TRIALS):
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
            # Each trial kills the Recorder, the server and both at least once between them.
            victim = VICTIMS[(trial + kill) % 3] if kill < 3 else rng.choice(VICTIMS)
            if not kill_after(org, run, process, target, victim):
                break
            kills[victim] += 1
            process.wait()  # a Recorder whose server died finishes the undo with retryable steps
            if rng.random() < 0.5 and progress(org, run) > 1:
                key = rng.choice(keys)
                if key in values(org.db()):
                    edited[key] = f"edited-by-eve-{kill}"
                    outside_edit(org.db(), key, edited[key], by="eve")
            process = spawn(org, "undo", ref)
        process.wait()
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
    assert kills["server"] + kills["both"] > 0, f"no server was killed (seed {SEED}): {kills}"


def _relied_on(key: str, edited: dict[str, str], calls: list[tuple[str, dict[str, str]]]) -> bool:
    """Whether ``key`` may legitimately stay: an edited key's step relied on it (attach target)."""
    return any(
        call[0] == "chain_attach" and call[1]["target"] == key and call[1]["key"] in edited for call in calls
    )
