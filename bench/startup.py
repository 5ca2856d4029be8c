"""How quickly the project's commands start: every console script's ``--help``, and each demo server's
time from being spawned to answering MCP ``initialize`` and ``tools/list`` over stdio.

``--help`` is run for every script in pyproject.toml's ``[project.scripts]`` (a bare ``python -c
pass`` first, as the floor). Each server is spawned as an agent's client spawns it, and spoken to in
plain JSON-RPC lines (no client library in the way): the time runs from the spawn to the
``tools/list`` answer. Beside each wall-clock time it prints the CPU time the process (and the
processes it waited for) used from spawn to exit, which a busy machine inflates much less than the
wall clock: on a shared machine, read that column. ``hatp-ui`` also needs the fake app (started
here, in this process) and chromium; without chromium it is skipped and said so. ``hatp-recorder
serve`` is measured in front of the CRM, and in front of the CRM, calendar and email servers (it
starts them itself, all at once, so its time includes theirs: the target is under 3 s for three).
``hatp-recorder explain`` is measured in front of the CRM, answering from the tool list kept at the
last connect (target under 1 s) and with ``--refresh`` (it starts the server).
``--only TEXT`` measures only the rows whose label contains TEXT (a before/after of one server).
``--baseline PYTHON`` adds, beside each server row, the same command from the environment of that
python (another checkout's ``.venv/bin/python``), spawned alternately with it: a before/after under the
same load.

Run: ``.venv/bin/python bench/startup.py [--runs N]`` or ``make bench-startup``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HELP_TARGET_S = 0.5
EXPLAIN_TARGET_S = 1.0
"""Issue 28: ``explain`` answers within this from a kept tool list."""
PROTOCOL = "2025-06-18"


def console_scripts() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(config["project"]["scripts"])


def children_cpu() -> float:
    """CPU seconds (user and system) used so far by the children this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds from spawn to exit; the command must succeed."""
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed, children_cpu() - cpu


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"server ended before answering request {request_id} (exit {process.wait()})")
        message: dict[str, object] = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise SystemExit(f"server answered request {request_id} with {message['error']}")
            return message


def time_to_tools(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall-clock seconds from spawning ``argv`` to its ``tools/list`` answer, the CPU seconds the
    process used from spawn to exit, and how many tools it listed."""
    cpu = children_cpu()
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        client = {"name": "bench-startup", "version": "0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        _answer(process, 1)
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = _answer(process, 2)
        elapsed = time.perf_counter() - started
    finally:
        assert process.stdin is not None
        process.stdin.close()  # end of input ends a stdio server
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    result = listed["result"]
    assert isinstance(result, dict)
    return elapsed, children_cpu() - cpu, len(result["tools"])


def servers(folder: Path, app_url: str | None, bin: Path = BIN) -> dict[str, list[str]]:
    """The demo servers as an agent's client spawns them (each with its own store and key), with the
    console scripts of the environment ``bin``."""
    spawned = {
        "hatp-crm serve": [str(bin / "hatp-crm"), "serve", "--db", f"{folder}/crm.db"],
        "hatp-calendar serve": [str(bin / "hatp-calendar"), "serve", "--db", f"{folder}/calendar.db"],
        "hatp-email serve": [str(bin / "hatp-email"), "serve", "--db", f"{folder}/email.db"],
    }
    if app_url is not None:
        spawned["hatp-ui serve"] = [
            str(bin / "hatp-ui"),
            "serve",
            "--app-url",
            app_url,
            "--db",
            f"{folder}/ui.db",
        ]
    for label, behind in (
        ("hatp-recorder serve (over hatp-crm)", ["crm"]),
        ("hatp-recorder (crm, calendar, email)", ["crm", "calendar", "email"]),  # fits the 40-wide column
    ):
        config = recorder_config(folder, behind, bin)
        spawned[label] = [
            str(bin / "hatp-recorder"),
            "--config",
            config,
            "serve",
        ]
    return spawned


def recorder_config(folder: Path, behind: list[str], bin: Path = BIN) -> str:
    """A Recorder's configuration in front of the demo servers named in ``behind`` (each its own store),
    spawned from the environment ``bin``."""
    policy = {
        "autonomy": {"read": "allow", "unknown": "ask", "none": "ask", "approver": "human://acme.com/lead"}
    }
    (folder / "policy.json").write_text(json.dumps(policy), encoding="utf-8")
    config = folder / f"recorder-{len(behind)}.toml"
    text = (
        "[recorder]\n"
        f'store = "{folder}/record-{len(behind)}.db"\n'
        f'key = "{folder}/recorder.key"\n'
        f'policy = "{folder}/policy.json"\n'
    )
    for name in behind:
        text += (
            f"\n[servers.{name}]\n"
            f"command = {json.dumps(str(bin / f'hatp-{name}'))}\n"
            f"args = {json.dumps(['serve', '--db', f'{folder}/recorder-{name}.db'])}\n"
        )
    config.write_text(text, encoding="utf-8")
    return str(config)


def explain_rows(folder: Path, runs: int, only: str) -> dict[str, list[tuple[float, float]]]:
    """``explain`` in front of the CRM: from the kept tool list, and with ``--refresh``."""
    if only not in "hatp-recorder explain":
        return {}
    print("hatp-recorder explain, in front of the CRM", file=sys.stderr)
    (folder / "explain").mkdir()
    config = recorder_config(folder / "explain", ["crm"])
    argv = [str(BIN / "hatp-recorder"), "--config", config, "explain", "crm", "update_deal"]
    refreshed = measure("--refresh", runs, lambda: timed_run([*argv, "--refresh"]))  # keeps the list
    kept = measure("kept list", runs, lambda: timed_run(argv))
    return {"from the kept tool list": kept, "--refresh (starts the server)": refreshed}


def measure(label: str, runs: int, once: Callable[[], tuple[float, float]]) -> list[tuple[float, float]]:
    """``runs`` samples of (wall-clock s, CPU s), with a dot on stderr for each."""
    print(f"  {label} ...", end="", flush=True, file=sys.stderr)
    samples = []
    for _ in range(runs):
        samples.append(once())
        print(".", end="", flush=True, file=sys.stderr)
    print(file=sys.stderr)
    return samples


def alternately(
    label: str, runs: int, argv: list[str], baseline: list[str], cwd: Path
) -> tuple[tuple[list[tuple[float, float]], int], tuple[list[tuple[float, float]], int]]:
    """``runs`` samples of ``argv`` and of ``baseline``, spawned one after the other (so that both
    see the same load; which goes first alternates), each with its tool count."""
    print(f"  {label}, and its baseline ...", end="", flush=True, file=sys.stderr)
    samples: tuple[list[tuple[float, float]], list[tuple[float, float]]] = ([], [])
    tools = [0, 0]
    for turn in range(runs):
        for side in (0, 1) if turn % 2 == 0 else (1, 0):
            elapsed, cpu, tools[side] = time_to_tools((argv, baseline)[side], cwd)
            samples[side].append((elapsed, cpu))
        print(".", end="", flush=True, file=sys.stderr)
    print(file=sys.stderr)
    return (samples[0], tools[0]), (samples[1], tools[1])


def row(label: str, samples: list[tuple[float, float]]) -> str:
    walls = [wall for wall, _ in samples]
    cpu = statistics.median(cpu for _, cpu in samples)
    return f"{label:40s}{statistics.median(walls):10.3f}{min(walls):8.3f}{max(walls):8.3f}{cpu:9.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="spawns per command (default 5); the median is shown"
    )
    parser.add_argument("--no-ui", action="store_true", help="skip hatp-ui (chromium and the fake app)")
    parser.add_argument("--only", default="", help="measure only the rows whose label contains this")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another environment's python (e.g. ../main/.venv/bin/python): its servers are spawned "
        "alternately with these, each row beside the other",
    )
    args = parser.parse_args()

    print("--help of every console script", file=sys.stderr)
    floor = [sys.executable, "-c", "pass"]
    helps = {"python -c pass": measure("python -c pass", args.runs, lambda: timed_run(floor))}
    for script in [script for script in console_scripts() if args.only in f"{script} --help"]:
        helps[f"{script} --help"] = measure(
            script, args.runs, lambda s=script: timed_run([str(BIN / s), "--help"])
        )

    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    starts: dict[str, tuple[list[tuple[float, float]], int]] = {}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hatp-bench-startup-") as scratch:
        folder = Path(scratch)
        app = None
        args.no_ui = args.no_ui or args.only not in "hatp-ui serve"
        if not args.no_ui and chromium is not None:
            from hatp_journal.servers.fakeapp import FakeApp

            app = FakeApp(folder / "fakeapp.db").start()
        elif not args.no_ui:
            skipped.append("hatp-ui serve: no chromium at /usr/bin/chromium")
        try:
            print("spawn to initialize + tools/list, over stdio", file=sys.stderr)
            url = app.url if app is not None else None
            ours = servers(folder, url)
            theirs: dict[str, list[str]] = {}
            if args.baseline is not None:
                (folder / "baseline").mkdir()
                theirs = servers(folder / "baseline", url, args.baseline.parent)
            for label, argv in ours.items():
                if args.only not in label:
                    continue
                if label in theirs:
                    walls = alternately(label, args.runs, argv, theirs[label], folder)
                    starts[label], starts[f"  baseline of {label[:26]}"] = walls
                    continue
                tools = 0

                def once(argv: list[str] = argv) -> tuple[float, float]:
                    nonlocal tools
                    elapsed, cpu, tools = time_to_tools(argv, folder)
                    return elapsed, cpu

                starts[label] = (measure(label, args.runs, once), tools)
            explains = explain_rows(folder, args.runs, args.only)
        finally:
            if app is not None:
                app.stop()

    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\nStartup — {now}, median of {args.runs} spawns (wall-clock min and max beside it)")
    print(f"CPython {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs, ", end="")
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"\n{'--help':40s}{'wall s':>10s}{'min':>8s}{'max':>8s}{'CPU s':>9s}   target < {HELP_TARGET_S} s")
    for label, samples in helps.items():
        median = statistics.median(wall for wall, _ in samples)
        verdict = "" if label.startswith("python") else ("met" if median < HELP_TARGET_S else "NOT met")
        print(f"{row(label, samples)}   {verdict}")
    spawned = "spawn to initialize + tools/list"
    print(f"\n{spawned:40s}{'wall s':>10s}{'min':>8s}{'max':>8s}{'CPU s':>9s}   tools")
    for label, (samples, tools) in starts.items():
        print(f"{row(label, samples)}   {tools}")
    if explains:
        said = "hatp-recorder explain crm update_deal"
        print(
            f"\n{said:40s}{'wall s':>10s}{'min':>8s}{'max':>8s}{'CPU s':>9s}   target < {EXPLAIN_TARGET_S} s"
        )
        for label, samples in explains.items():
            median = statistics.median(wall for wall, _ in samples)
            verdict = "" if "refresh" in label else ("met" if median < EXPLAIN_TARGET_S else "NOT met")
            print(f"{row(label, samples)}   {verdict}")
    for reason in skipped:
        print(f"skipped: {reason}")


if __name__ == "__main__":
    main()
