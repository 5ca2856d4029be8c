"""``Tx.after_commit`` runs only once the work committed, ``Tx.after_rollback`` only if it was dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session
from support import kv_server

from hatp_journal.toolkit import Effect, ToolFailed, Tx, Undone, compensates, undoable
from hatp_journal.toolkit.testing import JournalHarness

HAPPENED: list[str] = []


def _note(tx: Tx, what: str) -> None:
    tx.after_commit(lambda: HAPPENED.append(f"{what} committed"))
    tx.after_rollback(lambda: HAPPENED.append(f"{what} dropped"))


@undoable(window="PT1H")
def put_and_tell(key: str, value: str, tx: Tx) -> Effect:
    """``kv_server.put`` that notes what happens to its transaction; the value "refuse" fails it."""
    _note(tx, "call")
    effect = kv_server.put(key, value, tx)
    if value == "refuse":
        raise ToolFailed("refused after writing", field="value")
    return effect


@compensates(put_and_tell, state=kv_server.kv_state)
def unput_and_tell(payload: kv_server.KvUndo, tx: Tx) -> Undone:
    """``kv_server.unput`` that notes what happens to its transaction."""
    _note(tx, "undo")
    return kv_server.unput(payload, tx)


@pytest.fixture
def kv(tmp_path: Path) -> Iterator[JournalHarness]:
    HAPPENED.clear()
    kv_server.Knobs.raise_midway = False
    kv_server.Knobs.write_wrong_value = False
    yield JournalHarness(put_and_tell, unput_and_tell, store=tmp_path / "kv.db", server="kv://store")
    kv_server.Knobs.raise_midway = False
    kv_server.Knobs.write_wrong_value = False


def stored(kv: JournalHarness, key: str) -> str | None:
    with Session(kv.journal.engine) as session:
        item = session.get(kv_server.KvItem, key)
        return item.value if item else None


def test_a_call_that_commits_runs_its_after_commit_actions_only(kv: JournalHarness) -> None:
    kv.call("put_and_tell", key="a", value="1")

    assert HAPPENED == ["call committed"]


def test_a_call_that_fails_runs_its_after_rollback_actions_only_and_stores_nothing(
    kv: JournalHarness,
) -> None:
    with pytest.raises(ToolFailed):
        kv.call("put_and_tell", key="a", value="refuse")

    assert HAPPENED == ["call dropped"]
    assert stored(kv, "a") is None


def test_a_done_undo_runs_its_after_commit_actions_once_and_its_retry_none(kv: JournalHarness) -> None:
    kv.call("put_and_tell", key="a", value="1")
    second = kv.call("put_and_tell", key="a", value="2")

    first = kv.undo(second, request_id="r1")
    again = kv.undo(second, request_id="r1")

    assert (first.status, again) == ("done", first)
    assert HAPPENED == ["call committed", "call committed", "undo committed"]


@pytest.mark.parametrize("knob", ["raise_midway", "write_wrong_value"])
def test_an_undo_that_fails_or_is_unverified_runs_its_after_rollback_actions_only(
    kv: JournalHarness, knob: str
) -> None:
    kv.call("put_and_tell", key="a", value="1")
    second = kv.call("put_and_tell", key="a", value="2")
    setattr(kv_server.Knobs, knob, True)

    answer = kv.undo(second)

    assert answer.status in ("failed", "unverified")
    assert HAPPENED == ["call committed", "call committed", "undo dropped"]
    assert stored(kv, "a") == "2"
