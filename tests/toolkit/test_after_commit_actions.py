"""Recorded after-commit actions: a broken mail after a committed call is logged, kept, listed,
retried once the cause is gone, and sent once; a dropped call records nothing."""

from __future__ import annotations

import json
import logging
import smtplib
import socket
import sqlite3
import unicodedata
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from pydantic import BaseModel
from support import kv_server

from hatp_journal._shared.text import unsafe
from hatp_journal.toolkit import (
    DeclarationError,
    Effect,
    ToolFailed,
    Tx,
    after_commit_action,
    compensates,
    create_store_engine,
    undoable,
)
from hatp_journal.toolkit._after_commit import FIRST_RETRY, pending
from hatp_journal.toolkit._cli import main as journal_cli
from hatp_journal.toolkit.store import UNDO_SCHEMA
from hatp_journal.toolkit.testing import JournalHarness


class Mailbox:
    """A real SMTP server's handler: answers 451 while ``broken``, keeps what it accepts."""

    def __init__(self) -> None:
        self.broken = False
        self.received: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.broken:
            return "451 4.3.0 mailbox busy, try again later"
        self.received.append(envelope.content.decode("utf-8", "replace"))
        return "250 OK"


class ShipNotice(BaseModel):
    key: str
    value: str
    to: str
    port: int


@after_commit_action
def mail_the_notice(notice: ShipNotice) -> None:
    message = EmailMessage()
    message["From"] = "shop@acme.com"
    message["To"] = notice.to
    message["Subject"] = f"{notice.key} is now {notice.value}"
    message.set_content("Your order changed.")
    with smtplib.SMTP("127.0.0.1", notice.port, timeout=30) as smtp:
        smtp.send_message(message)


PORT: dict[str, int] = {}


@undoable(window="P1D")
def put_and_mail(key: str, value: str, tx: Tx) -> Effect:
    effect = kv_server.put(key, value, tx)
    tx.after_commit(
        mail_the_notice, ShipNotice(key=key, value=value, to="buyer@globex.com", port=PORT["smtp"])
    )
    if value == "refuse":
        raise ToolFailed("refused after writing", field="value")
    return effect


@compensates(put_and_mail, state=kv_server.kv_state)
def unput_and_mail(payload: kv_server.KvUndo, tx: Tx) -> Any:
    return kv_server.unput(payload, tx)


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    handler = Mailbox()
    with socket.socket() as probe:  # aiosmtpd's controller checks its own port, so it can't bind 0
        probe.bind(("127.0.0.1", 0))
        PORT["smtp"] = probe.getsockname()[1]
    controller = Controller(handler, hostname="127.0.0.1", port=PORT["smtp"])
    controller.start()
    yield handler
    controller.stop()


@pytest.fixture
def shop(tmp_path: Path) -> JournalHarness:
    return JournalHarness(
        put_and_mail, unput_and_mail, mail_the_notice, store=tmp_path / "shop.db", server="kv://shop"
    )


def test_a_broken_mail_after_a_committed_call_is_logged_kept_and_sent_once_when_the_cause_is_gone(
    shop: JournalHarness,
    mailbox: Mailbox,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mailbox.broken = True
    with caplog.at_level(logging.ERROR, logger="hatp_journal.toolkit._after_commit"):
        called = shop.call("put_and_mail", key="order-7", value="shipped")

    assert called.journal.effect.summary  # the call itself succeeded
    [logged] = [r for r in caplog.records if r.name == "hatp_journal.toolkit._after_commit"]
    assert "mail_the_notice" in logged.getMessage()
    assert "put_and_mail" in logged.getMessage()
    assert "451" in logged.getMessage()
    [waiting] = pending(shop.journal.engine)
    assert (waiting.action, waiting.attempts, waiting.state) == ("mail_the_notice", 1, "pending")
    assert waiting.last_error is not None
    assert "451" in waiting.last_error
    assert json.loads(waiting.data_json)["to"] == "buyer@globex.com"

    assert shop.journal.retry_pending() == 0  # not due yet: nothing is tried before its backoff
    mailbox.broken = False
    shop.clock.advance(FIRST_RETRY)
    assert shop.journal.retry_pending() == 1
    assert len(mailbox.received) == 1
    assert "Subject: order-7 is now shipped" in mailbox.received[0]
    assert pending(shop.journal.engine) == []

    shop.clock.advance("P1D")
    shop.journal.retry_pending()
    shop.call("put_and_mail", key="order-8", value="packed")  # a later call retries what is due, too
    assert len(mailbox.received) == 2  # order-7's mail was not sent again
    [done_7, done_8] = pending(shop.journal.engine, every=True)
    assert (done_7.state, done_7.attempts, done_8.state) == ("done", 2, "done")


def test_a_call_that_rolls_back_records_and_sends_nothing(shop: JournalHarness, mailbox: Mailbox) -> None:
    with pytest.raises(ToolFailed):
        shop.call("put_and_mail", key="order-9", value="refuse")

    assert pending(shop.journal.engine, every=True) == []
    assert mailbox.received == []


def test_a_person_drops_a_failing_action_from_the_command_line_and_it_is_never_tried_again(
    shop: JournalHarness, mailbox: Mailbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mailbox.broken = True
    shop.call("put_and_mail", key="order-7", value="shipped")
    [waiting] = pending(shop.journal.engine)

    assert journal_cli(["pending", "--db", str(tmp_path / "shop.db")]) == 0
    listed = capsys.readouterr().out
    assert waiting.id in listed
    assert "mail_the_notice" in listed
    assert "451" in listed

    assert journal_cli(["pending", "--db", str(tmp_path / "shop.db"), "--drop", waiting.id]) == 2  # no --by
    capsys.readouterr()
    dropped = ["pending", "--db", str(tmp_path / "shop.db"), "--drop", waiting.id, "--by", "kim@acme.com"]
    assert journal_cli(dropped) == 0
    assert journal_cli(dropped) == 2  # nothing waits by that id any more
    assert "NO_SUCH_ACTION" in capsys.readouterr().err

    mailbox.broken = False
    shop.clock.advance("P1D")
    assert shop.journal.retry_pending() == 0
    assert mailbox.received == []
    [kept] = pending(shop.journal.engine, every=True)
    assert (kept.state, kept.dropped_by) == ("dropped", "kim@acme.com")


def test_pending_json_writes_controls_and_bidi_overrides_in_the_data_as_escapes_and_reads_back_the_same(
    shop: JournalHarness, mailbox: Mailbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mailbox.broken = True
    value = "Zoë\x1b[2J\u009b31m\u2028\u202egpj.exe\u200b"
    shop.call("put_and_mail", key="order-7", value=value)
    capsys.readouterr()

    assert journal_cli(["pending", "--db", str(tmp_path / "shop.db"), "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    listed = json.loads(line)
    assert json.loads(listed["data_json"])["value"] == value
    assert "Zoë" in line
    assert [c for c in line if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")] == []


def test_pending_prints_a_kept_error_with_its_controls_escaped_on_one_line(
    shop: JournalHarness, mailbox: Mailbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mailbox.broken = True
    shop.call("put_and_mail", key="order-7", value="shipped")
    capsys.readouterr()
    # An action's error is whatever its exception said (a server's reply, a value): raw controls too.
    said = "refused \x1b[2J\x1b[31m\u009b1m\u202egpj.exe\u2028e9 done"
    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("UPDATE hatp_after_commit SET last_error = ?", (said,))

    assert journal_cli(["pending", "--db", str(tmp_path / "shop.db")]) == 0
    [line] = capsys.readouterr().out.splitlines()
    # Each escape written out; U+2028 is white space, so it became one space.
    assert line.endswith("last error: refused \\x1b[2J\\x1b[31m\\x9b1m\\u202egpj.exe e9 done")
    assert [c for c in line if unsafe(c)] == []


def test_a_plain_callable_that_fails_after_the_commit_is_logged_not_lost_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def explode() -> None:
        raise RuntimeError("the row was detached")

    @undoable(window="P1D")
    def put_and_explode(key: str, value: str, tx: Tx) -> Effect:
        tx.after_commit(explode)
        return kv_server.put(key, value, tx)

    @compensates(put_and_explode, state=kv_server.kv_state)
    def unput(payload: kv_server.KvUndo, tx: Tx) -> Any:
        return kv_server.unput(payload, tx)

    harness = JournalHarness(put_and_explode, unput, store=tmp_path / "kv.db", server="kv://store")
    with caplog.at_level(logging.ERROR, logger="hatp_journal.toolkit._after_commit"):
        harness.call("put_and_explode", key="a", value="1")

    [logged] = caplog.records
    assert "explode" in logged.getMessage()
    assert "put_and_explode" in logged.getMessage()
    assert "the row was detached" in logged.getMessage()


def test_recorded_actions_need_their_data_and_plain_callables_take_none() -> None:
    class Fake:
        session: Any = None

    with pytest.raises(DeclarationError, match="needs the plain data"):
        Tx(session=Fake.session, now=None, server="s", tool="t").after_commit(mail_the_notice)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="@after_commit_action"):
        Tx(session=Fake.session, now=None, server="s", tool="t").after_commit(print, {"a": 1})  # type: ignore[arg-type]


def test_a_store_made_before_recorded_actions_gains_their_table_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # an undo store as version 1 left it: no hatp_after_commit
        old.execute("CREATE TABLE hatp_schema (part VARCHAR(64) PRIMARY KEY, version INTEGER NOT NULL)")
        old.execute("INSERT INTO hatp_schema VALUES ('undo', 1)")
        old.execute("CREATE TABLE hatp_undo_record (token_hash VARCHAR PRIMARY KEY)")

    engine = create_store_engine(path)
    engine.dispose()

    with sqlite3.connect(path) as opened:
        tables = {row[0] for row in opened.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        [(version,)] = opened.execute("SELECT version FROM hatp_schema WHERE part = 'undo'").fetchall()
    assert "hatp_after_commit" in tables
    assert "hatp_undo_write" in tables  # and every later part of the schema
    assert version == UNDO_SCHEMA
