"""The outbox over a real SQLite store and real SMTP: nothing sent inside the transaction, delivered
after the commit, dropped on rollback, delivered by the next pass when a crash left it, kept when
the server is down; one deliverer at a time by the lease, which a dead courier's successor takes."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from sqlalchemy import Engine
from sqlmodel import Session as DbSession

from hatp_journal._shared import mail
from hatp_journal.servers.courier import lease_holder, run, take_lease
from hatp_journal.servers.mailsink import MailSink, resent
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink
from hatp_journal.servers.outbox import Outbox, OutboxNotice, Staged
from hatp_journal.toolkit import Tx, create_store_engine

__all__ = ["mail_sink"]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(tmp_path / "server.db")
    yield engine
    engine.dispose()


def notice(subject: str, to: str = "buyer@globex.com") -> EmailMessage:
    message = EmailMessage()
    message["From"] = "sales-bot@acme.com"
    message["To"] = to
    message["Subject"] = subject
    message.set_content("Hello.")
    return message


def staged_in_a_transaction(
    engine: Engine, outbox: Outbox, subject: str, *, commit: bool
) -> tuple[Tx, Staged]:
    with DbSession(engine) as session:
        tx = Tx(session=session, now=datetime(2026, 11, 4, tzinfo=UTC), server="test://outbox")
        staged = outbox.stage(tx, notice(subject), kind="email", about="test://outbox/1")
        if commit:
            session.commit()
        else:
            session.rollback()
    return tx, staged


def row(engine: Engine, notice_id: str) -> OutboxNotice | None:
    with DbSession(engine) as session:
        return session.get(OutboxNotice, notice_id)


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_notice_goes_out_after_the_commit_with_its_message_id_and_is_marked_sent(engine, mail_sink):
    outbox = Outbox(engine, mail_sink.host, mail_sink.port)

    tx, staged = staged_in_a_transaction(engine, outbox, "Welcome", commit=True)
    before = mail_sink.messages()
    tx.run_after_commit()
    [delivered] = mail_sink.wait_for(1)

    assert before == []  # staged: the server was only asked, nothing was sent
    assert str(delivered.message["Message-ID"]) == staged.message_id
    assert staged.message_id.startswith(f"<{staged.id}@acme.com")
    sent = row(engine, staged.id)
    assert sent is not None
    assert (sent.state, sent.attempts, sent.recipients()) == ("sent", 1, ["buyer@globex.com"])
    assert lease_holder(engine) is None  # an inline pass gives the lease back


def test_a_notice_staged_in_a_transaction_that_rolls_back_is_never_delivered(engine, mail_sink):
    outbox = Outbox(engine, mail_sink.host, mail_sink.port)

    dropped_tx, dropped = staged_in_a_transaction(engine, outbox, "Dropped", commit=False)
    dropped_tx.run_after_rollback()
    kept_tx, _ = staged_in_a_transaction(engine, outbox, "Kept", commit=True)
    kept_tx.run_after_commit()

    assert [m.subject for m in mail_sink.wait_for(1)] == ["Kept"]
    assert row(engine, dropped.id) is None
    assert outbox.flush() == []


def test_a_committed_notice_a_crash_left_unsent_goes_out_once_with_the_next_pass(engine, mail_sink):
    first_life = Outbox(engine, mail_sink.host, mail_sink.port)
    # The process dies after the commit, before anything delivers the notice.
    _, staged = staged_in_a_transaction(engine, first_life, "Cancelled: Kickoff", commit=True)

    restarted = Outbox(engine, mail_sink.host, mail_sink.port)
    flushed = restarted.flush()
    again = restarted.flush()

    [delivered] = mail_sink.wait_for(1)
    assert (flushed, again) == ([staged.id], [])
    assert str(delivered.message["Message-ID"]) == staged.message_id
    sent = row(engine, staged.id)
    assert sent is not None
    assert (sent.state, sent.attempts) == ("sent", 1)


def test_with_the_smtp_server_down_a_pass_keeps_the_notice_and_a_later_one_sends_it(
    engine, mail_sink, tmp_path
):
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, mail_sink.host, mail_sink.port), "Reminder", commit=True
    )
    port = mail_sink.port
    mail_sink.stop()

    down = Outbox(engine, mail_sink.host, port).flush()
    kept = row(engine, staged.id)
    with MailSink(tmp_path / "maildir") as back:
        up = Outbox(engine, back.host, back.port).flush()
        [delivered] = back.wait_for(1)

    assert down == []
    assert kept is not None
    assert (kept.state, kept.code, kept.attempts) == ("prepared", "MAIL_DELIVERY_FAILED", 1)
    assert up == [staged.id]
    assert str(delivered.message["Message-ID"]) == staged.message_id


def test_while_a_live_courier_holds_the_lease_nobody_else_delivers(engine, mail_sink):
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, mail_sink.host, mail_sink.port), "Invitation", commit=True
    )
    live = os.getppid()  # a live process that is not this one
    assert take_lease(engine, live)

    flushed = Outbox(engine, mail_sink.host, mail_sink.port).flush()
    taken = take_lease(engine, os.getpid())

    assert (flushed, taken) == ([], False)
    kept = row(engine, staged.id)
    assert kept is not None
    assert kept.state == "prepared"


def test_a_dead_couriers_lease_is_taken_over_and_its_notices_delivered(engine, mail_sink):
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, mail_sink.host, mail_sink.port), "Invitation", commit=True
    )
    assert take_lease(engine, dead_pid())
    assert lease_holder(engine) is None  # held by a dead process: nobody, for the living

    flushed = Outbox(engine, mail_sink.host, mail_sink.port).flush()

    assert flushed == [staged.id]
    assert [str(m.message["Message-ID"]) for m in mail_sink.wait_for(1)] == [staged.message_id]


def killed_between_the_250_and_its_mark(
    engine: Engine, sink: MailSink, store: Path
) -> tuple[Staged, int, list[str]]:
    """Stage a notice, run a courier that dies right after reading the notice's 250 (before its
    mark), then let the next pass deliver: (the notice, the courier's exit code, what was flushed)."""
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, sink.host, sink.port), "Cancelled: Kickoff", commit=True
    )
    env = {**os.environ, "HATP_JOURNAL_TESTING": "1", "HATP_JOURNAL_CRASH_AT": "courier:delivered"}
    courier = [sys.executable, "-m", "hatp_journal.servers.courier", "--store", str(store)]
    courier += ["--smtp-host", sink.host, "--smtp-port", str(sink.port)]
    killed = subprocess.run(courier, env=env, check=False, timeout=120)
    flushed = Outbox(engine, sink.host, sink.port).flush()  # takes the dead one's lease
    return staged, killed.returncode, flushed


def test_a_courier_killed_between_the_250_and_its_mark_restarts_the_transaction_and_no_second_copy_is_stored(
    engine, mail_sink, tmp_path
):
    staged, returncode, flushed = killed_between_the_250_and_its_mark(
        engine, mail_sink, tmp_path / "server.db"
    )

    delivered = mail_sink.messages()  # both attempts read their 250: stored
    sent = row(engine, staged.id)
    assert returncode == -signal.SIGKILL
    assert flushed == [staged.id]
    # The sink offers CHECKPOINT: the next courier named the same transaction (TRANSID), the sink
    # answered that it holds the whole message, and the courier sent only the final ".".
    assert [(m.message_id, m.envelope_id) for m in delivered] == [(staged.message_id, staged.id)]
    assert resent(delivered) == []
    assert sent is not None
    assert (sent.state, sent.attempts) == ("sent", 2)  # the killed courier's send is counted too


def test_without_checkpoint_a_courier_killed_before_its_mark_is_the_one_resend_with_the_same_message_id(
    engine, tmp_path
):
    with MailSink(tmp_path / "maildir", checkpoint=False) as sink:
        staged, returncode, flushed = killed_between_the_250_and_its_mark(
            engine, sink, tmp_path / "server.db"
        )
        delivered = sink.messages()

    copies = Counter((str(m.message["Message-ID"]), m.envelope_id) for m in delivered)
    sent = row(engine, staged.id)
    assert returncode == -signal.SIGKILL
    assert flushed == [staged.id]
    # A receiver can tell the copy: the same Message-ID, and the same ENVID (the sink offers DSN).
    assert copies == {(staged.message_id, staged.id): 2}
    assert [(r.message_id, r.numbers) for r in resent(delivered)] == [(staged.message_id, (1, 2))]
    assert sent is not None
    assert (sent.state, sent.attempts) == ("sent", 2)


def test_a_courier_whose_server_is_gone_delivers_what_waits_then_exits_and_gives_the_lease_back(
    engine, mail_sink
):
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, mail_sink.host, mail_sink.port), "Invitation", commit=True
    )

    code = run(engine, mail_sink.host, mail_sink.port, starter=dead_pid())

    assert code == 0
    assert [str(m.message["Message-ID"]) for m in mail_sink.wait_for(1)] == [staged.message_id]
    assert lease_holder(engine) is None


def test_a_second_courier_exits_at_once_while_a_live_one_holds_the_lease(engine, mail_sink):
    _, staged = staged_in_a_transaction(
        engine, Outbox(engine, mail_sink.host, mail_sink.port), "Invitation", commit=True
    )
    assert take_lease(engine, os.getppid())

    code = run(engine, mail_sink.host, mail_sink.port, starter=dead_pid())

    kept = row(engine, staged.id)
    assert code == 0
    assert kept is not None
    assert (kept.state, kept.attempts) == ("prepared", 0)
    assert mail_sink.messages() == []


class _RefusesAtTheEnd:
    """Accepts the sender, recipients and content, then answers the final "." with ``reply``."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return self.reply


class _AnyPort(Controller):
    # aiosmtpd 1.4.6 can't bind port 0 by itself (see hatp_journal.servers.mailsink._server).
    def _create_server(self) -> Awaitable[asyncio.AbstractServer]:
        return self._bind()

    async def _bind(self) -> asyncio.AbstractServer:
        server = await self.loop.create_server(self._factory_invoker, host=self.hostname, port=0)
        self.port = server.sockets[0].getsockname()[1]
        return server


@pytest.mark.parametrize(
    ("reply", "state"),
    [("554 5.7.1 rejected as spam", "failed"), ("451 4.3.0 try later", "prepared")],
    ids=["refused-for-good", "refused-for-now"],
)
def test_a_message_refused_at_its_end_is_failed_with_its_code_or_kept_for_later(engine, reply, state):
    controller = _AnyPort(_RefusesAtTheEnd(reply), hostname="127.0.0.1", port=0)
    controller.start()
    try:
        outbox = Outbox(engine, "127.0.0.1", int(controller.port))
        tx, staged = staged_in_a_transaction(engine, outbox, "Invitation", commit=True)
        errors = tx.run_after_commit()
    finally:
        controller.stop()

    refused = row(engine, staged.id)
    assert errors == []
    assert refused is not None
    assert (refused.state, refused.code) == (state, "MAIL_DELIVERY_FAILED")
    assert reply.split()[0] in (refused.reason or "")


class _LooksAtTheStoreBeforeAnswering:
    """Before it answers the final ".", tries to take the store's write lock (``wait`` seconds at
    most) and reads the notice's state from another connection; records both, then answers 250."""

    def __init__(self, database: Path, wait: float) -> None:
        self.database, self.wait = database, wait
        self.seen: list[tuple[str, str]] = []

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.seen.append(await asyncio.to_thread(self._look))
        return "250 OK"

    def _look(self) -> tuple[str, str]:
        db = sqlite3.connect(self.database, timeout=self.wait, isolation_level=None)
        try:
            [state] = db.execute("SELECT state FROM outbox_notice").fetchone()
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:  # "database is locked"
                return str(state), str(exc)
            db.execute("ROLLBACK")
            return str(state), "free"
        finally:
            db.close()


def test_the_sent_mark_is_staged_before_the_server_answers_so_nothing_waits_between_its_250_and_the_mark(
    engine, tmp_path
):
    handler = _LooksAtTheStoreBeforeAnswering(tmp_path / "server.db", wait=0)
    controller = _AnyPort(handler, hostname="127.0.0.1", port=0)
    controller.start()
    try:
        outbox = Outbox(engine, "127.0.0.1", int(controller.port))
        _, staged = staged_in_a_transaction(engine, outbox, "Invitation", commit=True)
        flushed = outbox.flush()
    finally:
        controller.stop()

    sent = row(engine, staged.id)
    # While the server stores the message, the courier holds the store's write lock with its mark
    # staged (not visible yet): the 250 is followed by one commit, not by a wait for the lock.
    assert handler.seen == [("prepared", "database is locked")]
    assert flushed == [staged.id]
    assert sent is not None
    assert (sent.state, sent.attempts) == ("sent", 1)


def test_a_server_slower_than_the_mark_may_hold_the_lock_gets_the_store_back_and_the_mark_after_its_reply(
    engine, tmp_path, monkeypatch
):
    monkeypatch.setattr(mail, "MARK_HOLD_SECONDS", 0.0)  # any server is slower than that
    handler = _LooksAtTheStoreBeforeAnswering(tmp_path / "server.db", wait=30)
    controller = _AnyPort(handler, hostname="127.0.0.1", port=0)
    controller.start()
    try:
        outbox = Outbox(engine, "127.0.0.1", int(controller.port))
        _, staged = staged_in_a_transaction(engine, outbox, "Invitation", commit=True)
        flushed = outbox.flush()
    finally:
        controller.stop()

    sent = row(engine, staged.id)
    assert handler.seen == [("prepared", "free")]  # another writer got the lock before the reply
    assert flushed == [staged.id]
    assert sent is not None
    assert (sent.state, sent.attempts) == ("sent", 1)
