"""Exporting and verifying a long Run Record: time and peak memory (issue 12, item 7).

Runs of 10k and 100k realistic entries are built in a temporary SQLite store: mostly signed
``call`` entries as the gateway journals them (arguments, policy decision, intake verdict, the
tool server's journal object with its receipt), and in every block of 50 entries an ``ask``,
the approver's signed ``decision`` (naming a directory snapshot), an ``undo-outcome`` with a
signed undo answer, and a ``note``. Each run is then exported with ``hatp-recorder export``'s
streaming path and verified from the file as ``hatp-recorder verify FILE`` does (signatures checked
on every core), each in its own child process, so that the peak memory of one does not hide in the
other's. The same file is verified again in one process, timing its signature checks: their cost on
one core, divided by the cores, is the floor verify on every core is held to (issue 28: at most
1.25 times the floor). The in-memory roads (``RunStore.export`` to a model, ``verify_record`` of the
bytes) are measured beside them.

Run: ``.venv/bin/python bench/verify_scale.py [--sizes 10000 100000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.cli import command_line as cli
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.record import RunStore, bodies, checkpoint_checks, signature_workers, verify_record
from hatp_journal.recorder.record.export import export_run
from hatp_journal.recorder.record.key_files import pinned_key
from hatp_journal.recorder.runs.asks import call_digest
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.store import create_store_engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recorder" / "record"))

from record_helpers import answer_body, call_body  # noqa: E402  (test helpers, on the path set above)

TARGET_VERIFY_S = 2.0
"""Issue 12: verifying 100k entries takes at most this long (idle machine)."""
TARGET_PEAK_MB = 200.0
"""Issues 12 and 28: exporting or verifying 100k entries peaks below this much memory."""
TARGET_FLOOR_RATIO = 1.25
"""Issue 28: verify on every core takes at most this many times the floor (the signature checks'
time on one core divided by the cores)."""
BLOCK = 50
"""Entries per block: 46 calls, an ask, its decision, an undo outcome and a note."""
APPROVER = "human://acme.com/lee"
ROLE = "human://acme.com/role/sales-lead"


# -- building a run -------------------------------------------------------------------------------


class Clock:
    """One second per reading, from a fixed start: the run's times are realistic and repeatable."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 4, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def fast_store(path: Path, key: SigningKey) -> RunStore:
    """A store that skips fsync while the bench fills it: the record is the same, only built faster."""
    engine = create_store_engine(path)

    @event.listens_for(engine, "connect")
    def no_fsync(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA synchronous=OFF")

    engine.dispose()  # connections made before the listener keep FULL
    return RunStore(engine, key, clock=Clock())


def gateway_call(server_key: SigningKey, n: int) -> dict[str, Any]:
    """A call body as the gateway journals an allowed, verified write (the D-881 kind)."""
    body = call_body(server_key, n)
    return {
        **body,
        "agent": "sales-bot",
        "principal": "human://acme.com/dana",
        "argumentsDigest": sha256_digest(body["arguments"]),
        "declared": "compensate",
        "intake": {"status": "verified", "kind": "compensate"},
        "outcome": {"status": "ok"},
        "links": [],
    }


def build(path: Path, size: int, progress: Callable[[int], None]) -> tuple[str, SigningKey, SigningKey]:
    """A run of ``size`` entries in a new store at ``path``: (run id, Recorder key, server key)."""
    recorder_key, server_key, lee = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    store = fast_store(path, recorder_key)
    PinStore(store.engine).pin_first("crm", {server_key.kid: server_key.public})
    directory = Directory.model_validate(
        {"people": [{"id": APPROVER, "roles": [ROLE], "publicKey": b64url(lee.public.raw())}]}
    )
    digest = store.keep_directory(directory.snapshot())
    run = store.open_run(agent="sales-bot", principal="human://acme.com/dana")
    for n in range(1, size + 1):
        place = n % BLOCK
        if place == 1 and n > BLOCK:
            store.append(run.id, "note", {"text": f"block {n // BLOCK}: pipeline checked"})
        elif place == 2 and n > BLOCK:
            called = n - BLOCK + 3  # the previous block's first plain call
            store.append(run.id, "undo-outcome", answer_body(server_key, step=f"e{called}", n=called))
        elif place == 3:
            ask = {**gateway_call(server_key, n), "approver": ROLE, "decideBy": "2026-11-04T14:00:00Z"}
            ask["callDigest"] = call_digest(ask["server"], ask["tool"], ask["arguments"])
            del ask["journal"], ask["intake"], ask["outcome"]
            store.append(run.id, "ask", ask)
        elif place == 4:
            approval = {
                "ask": f"{run.id}/e{n - 1}",
                "callDigest": call_digest("crm", "update_deal", {"deal_id": f"D-{n - 1}", "stage": "Won"}),
                "decision": "approve",
                "by": APPROVER,
                "at": "2026-11-04T10:00:00Z",
            }
            receipt = lee.sign({"approval": approval}, approval["at"]).wire()
            body = {"ask": f"e{n - 1}", "approval": approval, "receipt": receipt, "directory": digest}
            store.append(run.id, "decision", {**body, "counted": True})
        else:
            store.append(run.id, "call", gateway_call(server_key, n))
        if n % max(1, size // 20) == 0:
            progress(n)
    store.close_run(run.id)
    store.dispose()
    return run.id, recorder_key, server_key


# -- one measure, in a child process ------------------------------------------------------------


def memory_mb(field: str) -> float:
    """This process's resident memory now (``VmRSS``) or at its peak since it started (``VmHWM``).

    Read here rather than from ``getrusage`` in the parent: a child's ``ru_maxrss`` also counts the
    parent's memory it was forked from, before it ran this script.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def time_signature_checks() -> dict[str, Any]:
    """Time every signature check of a verification from here on: their preparation (the canonical
    payload, the receipt) and the Ed25519 check itself. Returns the figures, filled as it goes."""
    signing: dict[str, Any] = {"seconds": 0.0, "calls": 0, "ed25519_seconds": 0.0, "cpu": 0.0}

    def timed(function: Callable[..., Any], *, counted: bool, ed25519: bool = False) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                signing["cpu"] += time.process_time() - cpu
                signing["seconds"] += took
                signing["calls"] += counted
                if ed25519:
                    signing["ed25519_seconds"] += took

        return wrapper

    # Preparing a check (counted when it is checked: a check that fails before Ed25519 is counted
    # with it), then the check: on this process, as verifying with no workers does.
    for name in ("call_task", "digest_call_task", "answer_task", "_signed_task"):
        setattr(bodies, name, timed(getattr(bodies, name), counted=False))
    signature_workers.check_task = timed(signature_workers.check_task, counted=True, ed25519=True)  # type: ignore[assignment]
    bodies.verify = timed(bodies.verify, counted=True)  # type: ignore[attr-defined]  # host calls, links, overrides
    checkpoint_checks.verify = timed(checkpoint_checks.verify, counted=True)  # type: ignore[attr-defined]  # checkpoints
    return signing


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def child(task: str, folder: Path, run_id: str) -> None:
    """Run one measure and print its figures as JSON (the parent reads this process's peak RSS)."""
    signing = time_signature_checks() if task == "verify-one-core" else {"seconds": 0.0, "calls": 0}

    file = folder / f"{task}.json"
    pinned = ["--recorder-key", str(folder / "recorder.pub"), "--server-key", f"crm={folder / 'crm.pub'}"]
    baseline = memory_mb("VmRSS")
    cpu_start = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    said = io.StringIO()
    if task == "export":
        ok = cli.main(["--config", str(folder / "recorder.toml"), "export", run_id, "--out", str(file)]) == 0
    elif task == "verify":
        with contextlib.redirect_stdout(said):
            ok = cli.main(["verify", str(folder / "export.json"), *pinned]) == 0
    elif task == "verify-one-core":
        crm = pinned_key(folder / "crm.pub")
        recorder = pinned_key(folder / "recorder.pub")
        report = verify_record(
            folder / "export.json",
            recorder_keys={recorder.kid: recorder},
            server_keys={"crm": {crm.kid: crm}},
            workers=0,
        )
        ok = report.ok
    elif task == "export-model":
        store = RunStore(folder / "recorder.db", SigningKey.from_file(folder / "recorder.key"))
        file.write_bytes(export_run(store, run_id).to_bytes())
        ok = True
    else:  # verify-bytes
        crm = pinned_key(folder / "crm.pub")
        recorder = pinned_key(folder / "recorder.pub")
        report = verify_record(
            (folder / "export.json").read_bytes(),
            recorder_keys={recorder.kid: recorder},
            server_keys={"crm": {crm.kid: crm}},
        )
        ok = report.ok
    seconds = time.perf_counter() - start
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu_start[0]
    workers_cpu = cpu_seconds(resource.RUSAGE_CHILDREN) - cpu_start[1]  # workers ended: counted
    last_line = (said.getvalue().strip().splitlines() or [""])[-1]
    peak = memory_mb("VmHWM")
    figures = {
        "ok": ok,
        "seconds": seconds,
        "cpu": cpu,
        "workers_cpu": workers_cpu,
        "baseline_mb": baseline,
        "peak_mb": peak,
        "signing": signing,
    }
    print(json.dumps({**figures, "said": last_line}))


def measure(task: str, folder: Path, run_id: str) -> dict[str, Any]:
    """Run ``task`` in a child process of its own; its figures, peak memory included."""
    command = [sys.executable, __file__, "--child", task, str(folder), run_id]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {task} child failed (exit {done.returncode})")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not figures["ok"]:
        raise SystemExit(f"the {task} child did not succeed: {figures['said']}")
    return figures


# -- the run --------------------------------------------------------------------------------------


def prepare(folder: Path, size: int) -> str:
    """Build a run of ``size`` entries in ``folder`` with the files the commands need; its run id."""
    started = time.perf_counter()

    def progress(done: int) -> None:
        elapsed = time.perf_counter() - started
        print(
            f"\r  building {size} entries: {done} ({done * 100 // size}%), {elapsed:.0f} s",
            end="",
            file=sys.stderr,
        )

    run_id, recorder_key, server_key = build(folder / "recorder.db", size, progress)
    print(file=sys.stderr)
    recorder_key.save(folder / "recorder.key")
    for name, key in (("recorder.pub", recorder_key), ("crm.pub", server_key)):
        (folder / name).write_text(key.public.wire().model_dump_json(by_alias=True))
    (folder / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\n[servers.crm]\ncommand = "hatp-crm"\n'
    )
    return run_id


def bench(args: argparse.Namespace, workdir: Path) -> None:
    """Build each size, measure each task in its own process, print the table."""
    rows = []
    for size in args.sizes:
        folder = workdir / str(size)
        folder.mkdir()
        run_id = prepare(folder, size)
        row: dict[str, Any] = {"entries": size}
        tasks = ["export", "verify", "verify-one-core"]
        tasks += ["export-model", "verify-bytes"] if args.in_memory else []
        for task in tasks:
            print(f"  {size} entries: {task} ...", file=sys.stderr)
            row[task] = measure(task, folder, run_id)
        if (
            args.in_memory
            and (folder / "export-model.json").read_bytes() != (folder / "export.json").read_bytes()
        ):
            raise SystemExit("the streamed export and the model export differ")
        row["file_mb"] = (folder / "export.json").stat().st_size / 2**20
        rows.append(row)
        shutil.rmtree(folder)
    print(table(rows, args))


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """The figures as printed."""
    cores = signature_workers._cores()
    lines = [
        f"Run Record at scale — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; each measure in its own process",
        f"{platform.python_implementation()} {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} CPUs ({cores} usable), "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        "streamed, as `hatp-recorder export` and `hatp-recorder verify FILE` do it "
        f"(verify: signatures on {cores} worker processes):",
        f"{'entries':>8}{'file MB':>9}{'export s':>10}{'peak MB':>9}{'verify s':>10}"
        f"{'CPU s':>8}{'workers CPU s':>15}{'peak MB':>9}{'baseline MB':>13}",
    ]
    for row in rows:
        export, verify = row["export"], row["verify"]
        lines.append(
            f"{row['entries']:>8}{row['file_mb']:>9.1f}{export['seconds']:>10.2f}{export['peak_mb']:>9.0f}"
            f"{verify['seconds']:>10.2f}{verify['cpu']:>8.2f}{verify['workers_cpu']:>15.2f}"
            f"{verify['peak_mb']:>9.0f}{verify['baseline_mb']:>13.0f}"
        )
    lines.append("  CPU s: the verify process's own; workers CPU s: its signature workers'")
    lines.append("  baseline: the verify process before any work (Python and its imports)")
    lines += [
        "",
        "the floor: the same verify in one process, its signature checks timed "
        "(preparing each: canonical payload and receipt; then Ed25519):",
        f"{'entries':>8}{'one core s':>12}{'signatures':>12}{'checks s':>10}{'Ed25519 s':>11}"
        f"{'µs each':>9}{'the rest s':>12}{'floor s':>9}{'verify s':>10}{'ratio':>7}",
    ]
    for row in rows:
        alone, verify = row["verify-one-core"], row["verify"]
        signing = alone["signing"]
        floor = signing["seconds"] / cores
        lines.append(
            f"{row['entries']:>8}{alone['seconds']:>12.2f}{signing['calls']:>12}{signing['seconds']:>10.2f}"
            f"{signing['ed25519_seconds']:>11.2f}{signing['seconds'] / max(1, signing['calls']) * 1e6:>9.1f}"
            f"{alone['seconds'] - signing['seconds']:>12.2f}{floor:>9.2f}{verify['seconds']:>10.2f}"
            f"{verify['seconds'] / floor:>7.2f}"
        )
    lines.append(
        f"  floor = signatures × single-core cost ÷ cores ({cores}) = checks s ÷ {cores}; "
        "ratio = verify s ÷ floor"
    )
    lines += [
        "",
        "the same in CPU seconds, which other work on the machine does not inflate: the time verify "
        "would take on idle cores",
        "is at least its own CPU and at least all its processes' CPU shared by the cores:",
        f"{'entries':>8}{'checks CPU s':>14}{'floor CPU s':>13}{'verify CPU s':>14}{'workers CPU s':>15}"
        f"{'bound s':>9}{'ratio':>7}",
    ]
    for row in rows:
        alone, verify = row["verify-one-core"], row["verify"]
        floor_cpu = alone["signing"]["cpu"] / cores
        bound = max(verify["cpu"], (verify["cpu"] + verify["workers_cpu"]) / cores)
        lines.append(
            f"{row['entries']:>8}{alone['signing']['cpu']:>14.2f}{floor_cpu:>13.2f}{verify['cpu']:>14.2f}"
            f"{verify['workers_cpu']:>15.2f}{bound:>9.2f}{bound / floor_cpu:>7.2f}"
        )
    if args.in_memory:
        lines += [
            "",
            "in memory, for comparison (`RunStore.export` to a model, `verify_record` of the bytes):",
            f"{'entries':>8}{'export s':>10}{'peak MB':>9}{'verify s':>10}{'peak MB':>9}",
        ]
        for row in rows:
            export, verify = row["export-model"], row["verify-bytes"]
            lines.append(
                f"{row['entries']:>8}{export['seconds']:>10.2f}{export['peak_mb']:>9.0f}"
                f"{verify['seconds']:>10.2f}{verify['peak_mb']:>9.0f}"
            )
    largest = max(rows, key=lambda row: row["entries"])
    verify_s = largest["verify"]["seconds"]
    floor = largest["verify-one-core"]["signing"]["seconds"] / cores
    ratio = verify_s / floor
    peak = max(largest["export"]["peak_mb"], largest["verify"]["peak_mb"])
    lines += [
        "",
        f"targets at {largest['entries']} entries, on an idle machine:",
        f"  issue 28: verify <= {TARGET_FLOOR_RATIO} x the floor ({floor:.2f} s): {verify_s:.2f} s, "
        f"ratio {ratio:.2f}, {'met' if ratio <= TARGET_FLOOR_RATIO else 'NOT met'}",
        f"  issue 12: verify <= {TARGET_VERIFY_S} s: {verify_s:.2f} s, "
        f"{'met' if verify_s <= TARGET_VERIFY_S else 'NOT met'}",
        f"  peak memory <= {TARGET_PEAK_MB:.0f} MB, export and verify: {peak:.0f} MB, "
        f"{'met' if peak <= TARGET_PEAK_MB else 'NOT met'}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the options and run the benchmark (or, with ``--child``, one measure of it)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="entries per run")
    parser.add_argument(
        "--no-in-memory",
        dest="in_memory",
        action="store_false",
        help="skip the in-memory roads (slow, large)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go (default: a temp dir)")
    parser.add_argument("--child", nargs=3, metavar=("TASK", "FOLDER", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        task, folder, run_id = args.child
        child(task, Path(folder), run_id)
        return
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="verify-scale-", dir=args.dir) as workdir:
        bench(args, Path(workdir))


if __name__ == "__main__":
    main()
