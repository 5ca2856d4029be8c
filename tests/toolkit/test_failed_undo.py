"""A compensation that fails or can't be verified leaves the store as it was and says so.

Every test here runs on a SQLite file and on PostgreSQL (``store_url``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import text
from sqlmodel import Session
from support import kv_server

from hatp_journal.toolkit import ResourceState, ToolFailed, Tx, Versioned
from hatp_journal.toolkit._arguments import InvalidArguments
from hatp_journal.toolkit.testing import JournalHarness

UNDO_TABLES = ("hatp_undo_record", "hatp_undo_attempt", "hatp_undo_binding")


@pytest.fixture
def kv(store_url: str) -> Iterator[JournalHarness]:
    kv_server.Knobs.raise_midway = False
    kv_server.Knobs.write_wrong_value = False
    kv_server.Knobs.reads_before_failing = None
    kv_server.Knobs.reader_breaks = None
    kv_server.Knobs.evidence = []
    kv_server.Knobs.asked_who = []
    harness = JournalHarness(*kv_server.TOOLS, store=store_url, server="kv://store")
    yield harness
    harness.journal.engine.dispose()
    kv_server.Knobs.raise_midway = False
    kv_server.Knobs.write_wrong_value = False
    kv_server.Knobs.reads_before_failing = None
    kv_server.Knobs.reader_breaks = None


def value_of(kv: JournalHarness, key: str) -> str | None:
    with Session(kv.journal.engine) as session:
        item = session.get(kv_server.KvItem, key)
        return item.value if item else None


def test_a_compensation_that_raises_is_undo_failed_and_the_store_is_untouched(kv: JournalHarness) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.raise_midway = True

    answer = kv.undo(second)

    assert answer.status == "failed"
    assert answer.code == "UNDO_FAILED"
    assert "disk full" in answer.message
    assert value_of(kv, "a") == "2"
    assert kv.answer_verifies(answer)


def test_a_failed_compensation_can_be_attempted_again_and_then_succeeds(kv: JournalHarness) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.raise_midway = True
    kv.undo(second)
    kv_server.Knobs.raise_midway = False

    assert kv.undo(second).status == "failed"  # the same request gets its stored answer
    assert kv.undo(second, request_id="second attempt").status == "done"
    assert value_of(kv, "a") == "1"


def test_a_compensation_whose_result_does_not_match_the_state_before_is_unverified_and_rolled_back(
    kv: JournalHarness,
) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.write_wrong_value = True

    answer = kv.undo(second)

    assert answer.status == "unverified"
    assert answer.code == "UNDO_UNVERIFIED"
    assert value_of(kv, "a") == "2"


def test_a_resource_that_cannot_be_read_before_undo_is_undo_failed_with_nothing_run(
    kv: JournalHarness,
) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.reads_before_failing = 0

    check = kv.check(second)
    answer = kv.undo(second)

    assert (check.status, check.code) == ("failed", "UNDO_FAILED")
    assert (answer.status, answer.code) == ("failed", "UNDO_FAILED")
    assert value_of(kv, "a") == "2"
    assert kv.answer_verifies(answer)


def test_a_resource_that_cannot_be_read_back_after_undo_is_unverified_not_done(kv: JournalHarness) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.reads_before_failing = 1  # the check before the undo reads; the one after fails

    answer = kv.undo(second)

    assert (answer.status, answer.code) == ("unverified", "UNDO_UNVERIFIED")
    assert value_of(kv, "a") == "2"


def test_a_compensation_that_fails_halfway_keeps_its_evidence_in_the_answer(kv: JournalHarness) -> None:
    created = kv.call("put", key="new", value="x")
    kv_server.Knobs.raise_midway = True
    kv_server.Knobs.evidence = ["screenshot sha256:ab file:///tmp/before.png"]

    answer = kv.undo(created)

    assert (answer.status, answer.code) == ("failed", "UNDO_FAILED")
    assert answer.evidence == ["screenshot sha256:ab file:///tmp/before.png"]
    assert kv.answer_verifies(answer)


def test_undoing_a_create_removes_the_record(kv: JournalHarness) -> None:
    created = kv.call("put", key="new", value="x")

    answer = kv.undo(created)

    assert answer.status == "done"
    assert value_of(kv, "new") is None
    assert created.journal.effect is not None
    assert created.journal.effect.before is None


def test_undoing_a_create_of_a_record_changed_since_is_a_conflict(kv: JournalHarness) -> None:
    created = kv.call("put", key="new", value="x")
    with Session(kv.journal.engine) as session:
        kv_server.outside_edit(Tx(session=session, now=kv.clock(), server="kv"), "new", "y", "eve")
        session.commit()

    answer = kv.undo(created)

    assert answer.code == "UNDO_CONFLICT"
    assert answer.changed_by == "eve"
    assert answer.message.endswith(", changed by eve")
    assert value_of(kv, "new") == "y"


def test_who_changed_a_resource_is_looked_up_only_to_report_a_conflict(kv: JournalHarness) -> None:
    first = kv.call("put", key="a", value="1")
    kv.call("put", key="a", value="2")

    assert kv.check(first).status == "conflict"
    assert kv_server.Knobs.asked_who == ["a"]
    kv_server.Knobs.asked_who.clear()
    assert kv.undo(kv.call("put", key="a", value="3")).status == "done"
    assert kv_server.Knobs.asked_who == []


def test_a_tool_that_refuses_its_input_stores_nothing(kv: JournalHarness) -> None:
    with pytest.raises(ToolFailed) as refused:
        kv.call("put", key="", value="x")
    with pytest.raises(InvalidArguments) as invalid:
        kv.call("put", key="a")

    assert refused.value.code == "TOOL_FAILED"
    assert invalid.value.data["fields"] == ["value"]
    assert value_of(kv, "") is None


def test_the_token_is_stored_hashed_and_receipts_verify(kv: JournalHarness) -> None:
    call = kv.call("put", key="a", value="1")
    token = call.journal.compensation_token
    assert token is not None

    with kv.journal.engine.connect() as db:
        rows = [str(row) for table in UNDO_TABLES for row in db.execute(text(f"SELECT * FROM {table}"))]
    assert rows
    assert token not in "".join(rows)
    if kv.journal.engine.dialect.name == "sqlite":  # and nowhere in the files, the WAL included
        database = Path(kv.journal.engine.url.database or "")
        stored = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
        assert token.encode() not in stored
    assert len(token) - len("ctk_") >= 43  # 32 random bytes, base64url
    assert kv.receipt_verifies(call, "put", key="a", value="1")
    assert not kv.receipt_verifies(call, "put", key="a", value="2")


def test_error_data_may_use_any_key_even_code_or_message() -> None:
    from hatp_journal.toolkit._server import error_result
    from hatp_journal.toolkit.errors import ErrorCode

    result = error_result(ErrorCode.TOOL_FAILED, "refused", {"code": "MAIL", "message": "x", "tool": "t"})

    assert result.structured_content is not None
    assert result.structured_content["code"] == "TOOL_FAILED"
    assert result.structured_content["data"] == {"code": "MAIL", "message": "x", "tool": "t"}


def test_a_versioned_row_bumps_its_revision_and_reports_its_state() -> None:
    from datetime import UTC, datetime

    from hatp_journal.toolkit import Revision
    from hatp_journal.toolkit.wire import content_etag

    class Row(Versioned):
        stage: str

    start = Revision.of("v12", {"stage": "Proposal"})
    row = Row(stage="Won", version=start.version, etag=start.etag, changed_by="dana", changed_at="")

    before, after = row.record_change({"stage": "Won"}, by="agent", at=datetime(2026, 11, 1, tzinfo=UTC))

    assert (before, after.version) == (start, "v13")
    assert (row.version, row.etag, row.changed_by) == ("v13", content_etag({"stage": "Won"}), "agent")
    assert row.changed_at == "2026-11-01T00:00:00Z"
    assert row.state({"stage": "Won"}) == ResourceState("v13", {"stage": "Won"}, row.etag, "agent")


@pytest.mark.parametrize("breaks", ["crash", "wrong type"])
def test_a_state_reader_with_a_bug_makes_the_undo_fail_with_a_signed_answer_not_a_crash(
    kv: JournalHarness, breaks: Literal["crash", "wrong type"]
) -> None:
    kv.call("put", key="a", value="1")
    second = kv.call("put", key="a", value="2")
    kv_server.Knobs.reader_breaks = breaks

    check = kv.check(second)
    answer = kv.undo(second)

    assert (check.status, check.code) == ("failed", "UNDO_FAILED")
    assert (answer.status, answer.code) == ("failed", "UNDO_FAILED")
    assert kv.answer_verifies(answer)
    assert value_of(kv, "a") == "2"
    kv_server.Knobs.reader_breaks = None
    assert kv.undo(second, request_id="after the fix").status == "done"
    assert value_of(kv, "a") == "1"
