"""Hostile JSON-RPC lines at ``hatp-recorder serve`` over stdio: is every request answered, once?

Starts the Recorder in front of the demo CRM, opens a handshake-era session (``initialize``, so
that era's calls take the data plane too), then writes ``--lines`` lines from
``hatp_journal.recorder.testing.lines.hostile_lines`` (the generator the CI fuzz uses, at 200
lines): tool calls in both eras with arguments the record can't hold (integers past 2^53 and past
4,300 digits, nesting past 64 and past Python's parser, NaN, lone surrogates), lines that aren't
JSON, batches, wrong envelopes and ids, notifications. A last ``ping`` marks the end; stdin closes
once it is answered.

Printed: lines and bytes sent, requests that must be answered, answered once / never / more than
once, null-id answers beside the most allowed, tracebacks on the Recorder's stderr, the Recorder's
exit code, and the refused entries by code. Exits 1 if any invariant fails.

Run: ``.venv/bin/python bench/stdio_hostile.py [--lines 10000] [--seed 26]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.testing.lines import hostile_lines
from hatp_journal.toolkit import SigningKey

POLICY = {"autonomy": {"compensate": "allow", "read": "allow", "unknown": "ask", "none": "ask"}}
TOOLS = ["crm_get_deal", "crm_update_deal", "crm_create_deal"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def configure(folder: Path) -> list[str]:
    (folder / "policy.json").write_text(json.dumps(POLICY))
    args = ["-m", "hatp_journal.servers.crm.cli", "serve", "--db", str(folder / "crm.db")]
    (folder / "recorder.toml").write_text(
        f"[servers.crm]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    )
    return [
        sys.executable,
        "-m",
        "hatp_journal.recorder.cli",
        "--config",
        str(folder / "recorder.toml"),
        "serve",
    ]


async def run(lines: int, seed: int, folder: Path) -> int:
    hostile = list(hostile_lines(seed, lines, TOOLS))
    recorder = await asyncio.create_subprocess_exec(
        *configure(folder),
        cwd=folder,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=256 * 1024 * 1024,
    )
    assert recorder.stdin is not None
    assert recorder.stdout is not None
    assert recorder.stderr is not None
    answers: list[Any] = []
    last = asyncio.Event()
    initialized = asyncio.Event()

    async def read() -> None:
        assert recorder.stdout is not None
        while line := await recorder.stdout.readline():
            message = json.loads(line)
            for one in message if isinstance(message, list) else [message]:
                if "method" in one:
                    continue
                answers.append(one)
                if one.get("id") == "init":
                    initialized.set()
                if one.get("id") == "last":
                    last.set()

    stderr_task = asyncio.create_task(recorder.stderr.read())
    reading = asyncio.create_task(read())
    recorder.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    await initialized.wait()
    recorder.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    started = time.perf_counter()
    sent = 0
    for line in hostile:
        recorder.stdin.write(line.line + b"\n")
        sent += len(line.line) + 1
        await recorder.stdin.drain()
    recorder.stdin.write(b'{"jsonrpc": "2.0", "id": "last", "method": "ping"}\n')
    await recorder.stdin.drain()
    try:
        await asyncio.wait_for(last.wait(), 600)
    except TimeoutError:
        print("the last ping was not answered within 600 s")
    seconds = time.perf_counter() - started
    recorder.stdin.close()
    code = await recorder.wait()
    await reading
    stderr = (await stderr_task).decode(errors="replace")

    expected = Counter(json.dumps(i) for line in hostile for i in line.answered_as)
    got = Counter(json.dumps(a["id"]) for a in answers if a.get("id") not in (None, "init", "last"))
    never = expected - got
    twice = {key: count for key, count in got.items() if count > expected.get(key, 0)}
    nulls = sum(1 for a in answers if a.get("id") is None)
    allowed_nulls = sum(line.null_answers for line in hostile)
    tracebacks = stderr.count("Traceback")
    store = RunStore(folder / "recorder.db", SigningKey.from_file(folder / "recorder.key"))
    try:
        codes = Counter(
            e.body["code"] for run in store.runs() for e in store.entries(run.id) if e.kind == "refused"
        )
    finally:
        store.dispose()

    print(
        f"lines sent            {len(hostile)} ({sent / 1e6:.1f} MB) in {seconds:.1f} s, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(f"requests with an id   {sum(expected.values())}")
    print(f"answered once         {sum((expected & got).values())}")
    print(f"never answered        {sum(never.values())}")
    print(f"answered too often    {len(twice)}")
    print(f"null-id answers       {nulls} (at most {allowed_nulls})")
    print(f"tracebacks on stderr  {tracebacks}")
    print(f"recorder exit code    {code}")
    print(f"refused entries       {dict(codes)}")
    failed = bool(never) or bool(twice) or nulls > allowed_nulls or tracebacks or code != 0
    print("FAILED" if failed else "every request answered once, no traceback")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="stdio-hostile-") as folder:
        raise SystemExit(asyncio.run(run(args.lines, args.seed, Path(folder))))


if __name__ == "__main__":
    main()
