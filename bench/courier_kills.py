"""The courier's resend window in trials: ``kill -9`` a real courier while it delivers (issue 30).

Each trial stages ``--notices`` notices in a real SQLite store, starts a courier process
(``python -m hatp_journal.servers.courier``) against ``hatp-mailsink serve`` (a process of its own),
waits until it has marked its first notice ``sent``, then SIGKILLs it after a random delay of up to
the time it takes to deliver the rest (measured without a kill first). A pass in this process then
delivers what is left, as the next courier would. A notice whose Message-ID reached its recipient
twice is a resend: the kill landed between a final ``.`` and its ``sent`` mark.

Only the public pieces of the outbox are used, so the same script measures an older checkout too::

    PYTHONPATH=build/snap-OLD .venv/bin/python bench/courier_kills.py --kills 200

Run: ``.venv/bin/python bench/courier_kills.py [--kills 200] [--notices 5] [--seed N]``
"""

from __future__ import annotations

import argparse
import mailbox
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

from sqlmodel import Session

import hatp_journal.servers.courier as courier_module
from hatp_journal.servers.outbox import Outbox
from hatp_journal.toolkit import Tx, create_store_engine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stage(outbox: Outbox, engine: object, trial: int, count: int) -> None:
    with Session(engine) as session:  # type: ignore[call-overload]
        tx = Tx(session=session, now=datetime(2027, 1, 4, tzinfo=UTC), server="bench://kills")
        batch = outbox.batch(tx)
        for number in range(count):
            message = EmailMessage()
            message["From"], message["To"] = "sales-bot@acme.com", "buyer@globex.com"
            message["Subject"] = f"Trial {trial} notice {number}"
            message.set_content("Hello.\n" * 20)
            batch.stage(message, kind="email", about=f"bench://kills/{trial}/{number}")
        session.commit()


def _sent(database: Path) -> int:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
        return int(db.execute("SELECT count(*) FROM outbox_notice WHERE state = 'sent'").fetchone()[0])


def _courier(database: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "hatp_journal.servers.courier", "--store", str(database)]
    command += ["--smtp-host", "127.0.0.1", "--smtp-port", str(port), "--idle-seconds", "30"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--notices", type=int, default=5)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="courier-kills-"))
    database = root / "server.db"
    port = _free_port()
    serve = ["serve", "--dir", str(root / "mail"), "--port", str(port)]
    sink = subprocess.Popen(
        [sys.executable, "-m", "hatp_journal.servers.mailsink", *serve], stdout=subprocess.DEVNULL
    )
    started = time.monotonic()
    print(f"courier kills: {args.kills} trials of {args.notices} notices, seed {args.seed}, in {root}")
    print(f"  code: {Path(courier_module.__file__).resolve().parent.parent}", flush=True)
    try:
        while not _accepts(port):
            if sink.poll() is not None:
                raise SystemExit("the mail sink did not start")
            time.sleep(0.01)
        engine = create_store_engine(database)
        outbox = Outbox(engine, "127.0.0.1", port)
        # Calibration: how long a courier takes from its first mark to its last, with no kill.
        spans = []
        for trial in range(3):
            _stage(outbox, engine, -1 - trial, args.notices)
            before = _sent(database)
            process = _courier(database, port)
            while _sent(database) == before:
                time.sleep(0.001)
            first = time.monotonic()
            while _sent(database) < before + args.notices:
                time.sleep(0.001)
            spans.append(time.monotonic() - first)
            process.send_signal(signal.SIGTERM)
            process.wait()
        span = sorted(spans)[1]
        print(f"  delivering {args.notices - 1} notices after the first: {span * 1000:.0f} ms (median of 3)")
        killed = 0
        for trial in range(args.kills):
            _stage(outbox, engine, trial, args.notices)
            before = _sent(database)
            process = _courier(database, port)
            while _sent(database) == before and process.poll() is None:
                time.sleep(0.001)
            time.sleep(rng.uniform(0, span))
            if process.poll() is None:
                process.kill()
                killed += 1
            process.wait()
            outbox.flush()  # takes the dead courier's lease and delivers what is left
        engine.dispose()
    finally:
        sink.terminate()
        sink.wait()
    copies: Counter[str] = Counter()
    for message in mailbox.Maildir(root / "mail", create=False):
        copies[str(message["Message-ID"])] += 1
    doubled = sum(1 for count in copies.values() if count > 1)
    elapsed = time.monotonic() - started
    print(
        f"  {killed} couriers killed in {args.kills} trials, {len(copies)} notices, {elapsed:.0f} s,"
        f" load {os.getloadavg()[0]:.1f}"
    )
    print(f"  notices mailed twice: {doubled} ({doubled / max(killed, 1):.1%} of the kills)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
