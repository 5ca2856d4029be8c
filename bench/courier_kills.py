"""The courier's resend window in trials: ``kill -9`` a real courier while it delivers (issue 30).

Each trial stages ``--notices`` notices in a real SQLite store, starts a courier process
(``python -m hatp_journal.servers.courier``) against ``hatp-mailsink serve`` (a process of its own),
waits until it has marked its first notice ``sent``, then SIGKILLs it after a random delay of up to
the time it takes to deliver the rest (measured without a kill first). A pass in this process then
delivers what is left, as the next courier would. A notice whose Message-ID reached its recipient
twice is a resend: the kill landed between a final ``.`` and its ``sent`` mark.

Every trial runs twice, side by side with the same random point of the kill: against a sink that
offers CHECKPOINT (RFC 1845; the courier names each notice's transaction and the sink answers a
restart of a stored one with its whole length, so no second copy is stored) and against one that
does not (``--no-checkpoint``, as most SMTP servers), where the same kill leaves a second copy.
Each line also gives the restarts the sink logged as recognised.

Only the public pieces of the outbox are used, so the same script measures an older checkout too::

    PYTHONPATH=build/snap-OLD .venv/bin/python bench/courier_kills.py --kills 200

Run: ``.venv/bin/python bench/courier_kills.py [--kills 200] [--notices 5] [--seed N]`` (an older
checkout whose sink has no ``--no-checkpoint`` runs the second column's sink as it is).
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


class Side:
    """One column of the comparison: its own sink (with or without CHECKPOINT), store and Maildir."""

    def __init__(self, root: Path, checkpoint: bool) -> None:
        self.checkpoint = checkpoint
        self.root = root / ("checkpoint" if checkpoint else "no-checkpoint")
        self.root.mkdir()
        self.database = self.root / "server.db"
        self.port = _free_port()
        serve = ["serve", "--dir", str(self.root / "mail"), "--port", str(self.port)]
        self.log = (self.root / "sink.log").open("wb")
        self.sink = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hatp_journal.servers.mailsink",
                *serve,
                *([] if checkpoint else ["--no-checkpoint"]),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        while not _accepts(self.port):
            if self.sink.poll() is not None:
                raise SystemExit(f"the mail sink did not start; see {self.root / 'sink.log'}")
            time.sleep(0.01)
        self.engine = create_store_engine(self.database)
        self.outbox = Outbox(self.engine, "127.0.0.1", self.port)
        self.span = 0.0
        self.killed = 0

    def calibrate(self, notices: int) -> None:
        """How long a courier takes from its first mark to its last, with no kill (median of 3)."""
        spans = []
        for trial in range(3):
            _stage(self.outbox, self.engine, -1 - trial, notices)
            before = _sent(self.database)
            process = _courier(self.database, self.port)
            while _sent(self.database) == before:
                time.sleep(0.001)
            first = time.monotonic()
            while _sent(self.database) < before + notices:
                time.sleep(0.001)
            spans.append(time.monotonic() - first)
            process.send_signal(signal.SIGTERM)
            process.wait()
        self.span = sorted(spans)[1]

    def trial(self, number: int, notices: int, point: float) -> None:
        """Stage, start a courier, kill it at ``point`` (0–1) of the calibrated span, flush the rest."""
        _stage(self.outbox, self.engine, number, notices)
        before = _sent(self.database)
        process = _courier(self.database, self.port)
        while _sent(self.database) == before and process.poll() is None:
            time.sleep(0.001)
        time.sleep(point * self.span)
        if process.poll() is None:
            process.kill()
            self.killed += 1
        process.wait()
        self.outbox.flush()  # takes the dead courier's lease and delivers what is left

    def close(self) -> None:
        self.engine.dispose()
        self.sink.terminate()
        self.sink.wait()
        self.log.close()

    def doubled(self) -> tuple[int, int]:
        """(notices whose Message-ID reached the recipient twice, all notices)."""
        copies: Counter[str] = Counter()
        for message in mailbox.Maildir(self.root / "mail", create=False):
            copies[str(message["Message-ID"])] += 1
        return sum(1 for count in copies.values() if count > 1), len(copies)

    def restarts(self) -> int:
        """Restarts the sink logged as recognised (each a copy it did not store)."""
        text = (self.root / "sink.log").read_text(errors="replace")
        return sum(": stored already, no second copy" in line for line in text.splitlines())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--notices", type=int, default=5)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="courier-kills-"))
    started = time.monotonic()
    print(f"courier kills: {args.kills} trials of {args.notices} notices, seed {args.seed}, in {root}")
    print(f"  code: {Path(courier_module.__file__).resolve().parent.parent}", flush=True)
    sides = [Side(root, checkpoint=True), Side(root, checkpoint=False)]
    try:
        for side in sides:
            side.calibrate(args.notices)
        spans = ", ".join(f"{_name(side)} {side.span * 1000:.0f} ms" for side in sides)
        print(f"  delivering {args.notices - 1} notices after the first (median of 3): {spans}", flush=True)
        for trial in range(args.kills):
            point = rng.random()
            for side in sides:  # the same point of the kill on both sides
                side.trial(trial, args.notices, point)
            if (trial + 1) % 20 == 0:
                print(f"  {trial + 1}/{args.kills} trials, {time.monotonic() - started:.0f} s", flush=True)
    finally:
        for side in sides:
            side.close()
    elapsed = time.monotonic() - started
    print(f"  {args.kills} trials in {elapsed:.0f} s, load {os.getloadavg()[0]:.1f}")
    for side in sides:
        doubled, notices = side.doubled()
        print(
            f"  {_name(side):<36} couriers killed {side.killed:>4}, notices {notices:>5},"
            f" mailed twice {doubled:>4} ({doubled / max(side.killed, 1):.1%} of the kills),"
            f" restarts recognised {side.restarts():>4}"
        )
    return 0


def _name(side: Side) -> str:
    return "the sink offering CHECKPOINT" if side.checkpoint else "the sink without CHECKPOINT"


if __name__ == "__main__":
    sys.exit(main())
