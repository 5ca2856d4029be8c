"""The outbox on a PostgreSQL undo store, as replicas of a tool server share it: a notice committed
with its change goes out once, even with a courier process and a replica's inline pass at it at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, select
from support.waiting import wait_until

from hatp_journal.servers.courier import LEASE, lease_holder, take_lease
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink
from hatp_journal.servers.outbox import Outbox, OutboxCourier, OutboxNotice, Staged
from hatp_journal.toolkit import Tx, create_store_engine

__all__ = ["mail_sink"]

NOTICES = 6


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    engine = create_store_engine(postgres_url)
    yield engine
    engine.dispose()


def committed(engine: Engine, outbox: Outbox, subject: str) -> tuple[Tx, Staged]:
    """A notice staged in a tool's transaction that commits."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "sales-bot@acme.com", "buyer@globex.com", subject
    message.set_content("Hello.")
    with Session(engine) as session:
        tx = Tx(session=session, now=datetime(2026, 11, 4, tzinfo=UTC), server="test://outbox")
        staged = outbox.stage(tx, message, kind="email", about="test://outbox/1")
        session.commit()
    return tx, staged


def states(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return sorted(notice.state for notice in session.exec(select(OutboxNotice)).all())


def test_a_notice_committed_on_postgresql_goes_out_after_the_commit_and_is_marked_sent(
    engine: Engine, mail_sink: MailSink
) -> None:
    outbox = Outbox(engine, mail_sink.host, mail_sink.port)

    tx, staged = committed(engine, outbox, "Welcome")
    before = mail_sink.messages()
    tx.run_after_commit()

    [delivered] = mail_sink.wait_for(1)
    assert before == []
    assert str(delivered.message["Message-ID"]) == staged.message_id
    assert states(engine) == ["sent"]
    assert lease_holder(engine) is None


def test_a_courier_process_and_a_replicas_pass_deliver_each_notice_once(
    engine: Engine, mail_sink: MailSink, postgres_url: str
) -> None:
    outbox = Outbox(engine, mail_sink.host, mail_sink.port)
    ids = {committed(engine, outbox, f"Notice {n}")[1].message_id for n in range(NOTICES)}
    courier = [sys.executable, "-m", "hatp_journal.servers.courier", "--store", postgres_url]
    courier += ["--smtp-host", mail_sink.host, "--smtp-port", str(mail_sink.port), "--idle-seconds", "0"]

    process = subprocess.Popen(courier, env=dict(os.environ))
    outbox.flush()  # at the same time as the courier: whoever holds the lease delivers
    assert process.wait(timeout=120) == 0
    outbox.flush()  # whatever is left (this pass found the lease taken, the courier went idle)

    copies = Counter(str(m.message["Message-ID"]) for m in mail_sink.wait_for(NOTICES))
    assert copies == dict.fromkeys(ids, 1)
    assert states(engine) == ["sent"] * NOTICES


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def lock_waiters(engine: Engine) -> int:
    """Connections of this database waiting for a lock."""
    with engine.connect() as connection:
        query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        return int(connection.execute(text(query)).scalar_one())


def test_two_couriers_taking_over_a_dead_holders_lease_take_turns_and_one_gets_it(engine: Engine) -> None:
    assert take_lease(engine, dead_pid())
    live = os.getppid()  # a live process that is not this one
    taken: list[bool] = []
    # The first taker is mid-takeover: it holds the lease row, found its holder dead and wrote itself.
    with Session(engine) as first:
        held = first.get(OutboxCourier, LEASE, with_for_update=True)
        assert held is not None
        held.pid = live
        first.add(held)
        first.flush()
        second = threading.Thread(target=lambda: taken.append(take_lease(engine, os.getpid())))
        second.start()
        wait_until(
            lambda: lock_waiters(engine) == 1, "the second taker to wait for the row", alive=second.is_alive
        )
        first.commit()
    second.join()

    assert taken == [False]  # it waited, then saw a live holder: not two couriers at once
    holder = lease_holder(engine)
    assert holder is not None
    assert holder.pid == live
