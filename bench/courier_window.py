"""How long the courier's resend window lasts, notice by notice (issue 30).

The window is where a ``kill -9`` of the courier makes the next courier send a notice again: from
the final ``.`` of the message to the commit of its ``sent`` mark. It has two parts:

- the receiver's: the SMTP server stores the message (the sink fsyncs file and folder, as an MTA
  must before it answers) and answers ``250``;
- the courier's: from reading that ``250`` to the mark being committed. The mark is staged in an
  open transaction before the message goes out, so this part is one commit; before issue 30 it was
  an ORM session that read the row, wrote it and committed (and first waited for the write lock).

It stages ``--notices`` notices in a real SQLite store, runs ``hatp-mailsink serve`` as a process of
its own (as an SMTP server is), delivers them as the courier does, timing each part, then times the
old mark (the ORM session) on the same store. Prints medians and 90th/99th percentiles in ms.

Run: ``.venv/bin/python bench/courier_window.py [--notices 300]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

from sqlmodel import Session

from hatp_journal._shared.mail import Envelope, SmtpSession
from hatp_journal.servers.courier import Deliverer, SentMark
from hatp_journal.servers.outbox import Outbox
from hatp_journal.toolkit import Tx, create_store_engine


class TimedMark(SentMark):
    """The courier's mark, with the time it finished staging and the times its commit began and ended."""

    staged = began = ended = 0.0

    def prepare(self) -> None:
        super().prepare()
        self.staged = time.perf_counter()

    def commit(self) -> None:
        self.began = time.perf_counter()
        super().commit()
        self.ended = time.perf_counter()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    at = lambda share: ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000  # noqa: E731
    median, mean = statistics.median(ordered) * 1000, statistics.fmean(ordered) * 1000
    return f"median {median:6.2f}  mean {mean:6.2f}  p90 {at(0.9):6.2f}  p99 {at(0.99):6.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--notices", type=int, default=300)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="courier-window-"))
    port = _free_port()
    serve = ["serve", "--dir", str(root / "mail"), "--port", str(port)]
    sink = subprocess.Popen(
        [sys.executable, "-m", "hatp_journal.servers.mailsink", *serve], stdout=subprocess.DEVNULL
    )
    try:
        while not _accepts(port):
            if sink.poll() is not None:
                raise SystemExit("the mail sink did not start")
            time.sleep(0.01)
        engine = create_store_engine(root / "server.db")
        outbox = Outbox(engine, "127.0.0.1", port)
        with Session(engine) as session:
            tx = Tx(session=session, now=datetime(2027, 1, 4, tzinfo=UTC), server="bench://courier")
            batch = outbox.batch(tx)
            for number in range(args.notices):
                message = EmailMessage()
                message["From"], message["To"] = "sales-bot@acme.com", "buyer@globex.com"
                message["Subject"] = f"Notice {number}"
                message.set_content("Hello.\n" * 20)
                batch.stage(message, kind="email", about=f"bench://courier/{number}")
            session.commit()
        deliverer = Deliverer(engine, "127.0.0.1", port)
        smtp = SmtpSession("127.0.0.1", port)
        receiver: list[float] = []
        ours: list[float] = []
        rows = deliverer.pending()
        for row in rows:
            mark = TimedMark(deliverer._marks, row.id)
            envelope = Envelope(
                row.sender, tuple(row.recipients()), row.data, tuple(json.loads(row.options_json)), row.id
            )
            smtp.send(envelope, mark)
            assert smtp.marked, "a reply slower than MARK_HOLD_SECONDS: rerun on a quieter machine"
            receiver.append(mark.began - mark.staged)
            ours.append(mark.ended - mark.began)
        smtp.close()
        old: list[float] = []
        for row in rows:  # the mark before issue 30: an ORM session after the 250
            began = time.perf_counter()
            deliverer._mark(row.id, None)
            old.append(time.perf_counter() - began)
        engine.dispose()
    finally:
        sink.terminate()
        sink.wait()
    window = [r + o for r, o in zip(receiver, ours, strict=True)]
    print(f"courier window: {args.notices} notices, load {os.getloadavg()[0]:.1f}, in {root}")
    print(f"  the receiver's part (final '.' to 250 read)    {_ms(receiver)}")
    print(f"  the courier's part (250 read to mark committed) {_ms(ours)}")
    print(f"  the window (final '.' to mark committed)        {_ms(window)}")
    print(f"  the courier's part before issue 30 (ORM mark)   {_ms(old)}")
    before = statistics.fmean(receiver) + statistics.fmean(old)
    now = statistics.fmean(window)
    print(
        f"  mean window before issue 30 (the receiver's part + the ORM mark) {before * 1000:.2f} ms,"
        f" now {now * 1000:.2f} ms: {before / now:.2f}x shorter; the courier's own part"
        f" {statistics.fmean(old) / statistics.fmean(ours):.0f}x shorter"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
