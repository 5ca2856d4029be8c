"""``effect.changes``: the fields a call changed, sent and signed with the summary that shows them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlmodel import Field, SQLModel

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.toolkit import (
    Effect,
    ResourceState,
    Revision,
    Tx,
    Undone,
    compensates,
    previews,
    summarize,
    undoable,
)
from hatp_journal.toolkit.signing import verify_call
from hatp_journal.toolkit.testing import JournalHarness
from hatp_journal.toolkit.versions import Summary, changes_text, field_changes, value_text
from hatp_journal.toolkit.wire import EffectChange


class Bin(SQLModel, table=True):
    item: str = Field(primary_key=True)
    available: int
    reserved: int
    version: str
    etag: str


class BinUndo(BaseModel):
    item: str
    available: int
    reserved: int


def _counts(bin_: Bin) -> dict[str, int]:
    return {"available": bin_.available, "reserved": bin_.reserved}


def _move(tx: Tx, item: str, count: int) -> tuple[dict[str, int], Bin, Revision, Revision]:
    bin_ = tx.session.get(Bin, item)
    if bin_ is None:
        start = Revision.of("v1", {"available": 10, "reserved": 0})
        bin_ = Bin(item=item, available=10, reserved=0, version=start.version, etag=start.etag)
    was, before = _counts(bin_), Revision(bin_.version, bin_.etag)
    bin_.available, bin_.reserved = bin_.available - count, bin_.reserved + count
    after = before.bump(_counts(bin_))
    bin_.version, bin_.etag = after.version, after.etag
    tx.session.add(bin_)
    return was, bin_, before, after


def _effect(item: str, summary: str, bin_: Bin, before: Revision, after: Revision, **more: Any) -> Effect:
    return Effect(
        result=_counts(bin_),
        summary=summary,
        resource=f"bins://{item}",
        before=before.version,
        version=after.version,
        before_etag=before.etag,
        etag=after.etag,
        undo=BinUndo(item=item, available=bin_.available, reserved=bin_.reserved),
        **more,
    )


@undoable(window="PT1H")
def reserve(item: str, count: int, tx: Tx) -> Effect:
    """Summarized from the stored counts."""
    was, bin_, before, after = _move(tx, item, count)
    return _effect(item, summarize(f"Bin {item}", was, _counts(bin_)), bin_, before, after)


@undoable(window="PT1H")
def reserve_in_words(item: str, count: int, tx: Tx) -> Effect:
    """Its own words, and the changes given beside them."""
    was, bin_, before, after = _move(tx, item, count)
    summary = f"Reserved {count} of {item}"
    return _effect(item, summary, bin_, before, after, changes=field_changes(was, _counts(bin_)))


@undoable(window="PT1H")
def reserve_unsaid(item: str, count: int, tx: Tx) -> Effect:
    """Its own words and no changes."""
    _, bin_, before, after = _move(tx, item, count)
    return _effect(item, f"Reserved {count} of {item}", bin_, before, after)


def bin_state(resource: str, tx: Tx) -> ResourceState:
    bin_ = tx.session.get(Bin, resource.removeprefix("bins://"))
    return ResourceState(None) if bin_ is None else ResourceState(bin_.version, _counts(bin_), bin_.etag)


# These tests never undo: the compensations are there because an @undoable tool needs one.
@compensates(reserve, state=bin_state)
def unreserve(payload: BinUndo, tx: Tx) -> Undone:
    return Undone(version=None)


@compensates(reserve_in_words, state=bin_state)
def unreserve_in_words(payload: BinUndo, tx: Tx) -> Undone:
    return Undone(version=None)


@compensates(reserve_unsaid, state=bin_state)
def unreserve_unsaid(payload: BinUndo, tx: Tx) -> Undone:
    return Undone(version=None)


@pytest.fixture
def bins(tmp_path: Path) -> JournalHarness:
    tools = (reserve, unreserve, reserve_in_words, unreserve_in_words, reserve_unsaid, unreserve_unsaid)
    return JournalHarness(*tools, store=tmp_path / "bins.db", server="bins://store")


TWO_FIELDS = [
    {"field": "available", "before": 10, "after": 6},
    {"field": "reserved", "before": 0, "after": 4},
]


def test_a_summarized_two_field_change_sends_both_fields_in_the_summarys_order(bins: JournalHarness) -> None:
    call = bins.call("reserve", item="bolts", count=4)

    effect = call.journal.wire()["effect"]
    assert effect["summary"] == "Bin bolts available: 10 → 6; reserved: 0 → 4"
    assert effect["changes"] == TWO_FIELDS
    assert bins.receipt_verifies(call, "reserve", item="bolts", count=4)


def test_the_receipt_signs_the_changes_so_altered_ones_do_not_verify(bins: JournalHarness) -> None:
    call = bins.call("reserve", item="bolts", count=4)
    altered = call.journal.wire()
    altered["effect"]["changes"][1]["after"] = 40

    assert not verify_call(altered, "reserve", {"item": "bolts", "count": 4}, bins.keys)


def test_a_summary_in_the_servers_own_words_sends_the_changes_the_tool_gives(bins: JournalHarness) -> None:
    call = bins.call("reserve_in_words", item="bolts", count=4)

    effect = call.journal.wire()["effect"]
    assert effect["summary"] == "Reserved 4 of bolts"
    assert effect["changes"] == TWO_FIELDS


def test_a_summary_in_the_servers_own_words_without_changes_sends_none(bins: JournalHarness) -> None:
    call = bins.call("reserve_unsaid", item="bolts", count=4)

    assert "changes" not in call.journal.wire()["effect"]


def test_a_preview_carries_the_changes_too(tmp_path: Path) -> None:
    @previews(reserve)
    def preview_reserve(item: str, count: int, tx: Tx) -> Effect:
        return reserve(item, count, tx)

    harness = JournalHarness(reserve, unreserve, preview_reserve, store=tmp_path / "p.db", server="bins://p")

    info = harness.journal.preview("reserve", {"item": "bolts", "count": 4})

    assert [change.wire() for change in info.changes or []] == TWO_FIELDS


def test_an_unchanged_summary_says_so_and_lists_no_changes() -> None:
    summary = summarize("Deal D-881", {"stage": "Won"}, {"stage": "Won"})

    assert (summary, summary.changes) == ("Deal D-881 unchanged", ())


def test_summarize_lists_only_changed_fields_in_the_order_of_the_values_after() -> None:
    summary = summarize("Bin b", {"a": 1, "b": 2, "c": 3}, {"c": 4, "b": 2, "a": 0})

    assert summary == "Bin b c: 3 → 4; a: 1 → 0"
    assert isinstance(summary, Summary)
    assert [change.field for change in summary.changes] == ["c", "a"]


def test_values_read_the_same_in_a_summary_and_in_a_record_that_keeps_them_canonical() -> None:
    before = {"price": 1.0, "note": None, "open": True, "tags": {"b": 1, "a": [2]}}
    after = {"price": 2.5, "note": "call back", "open": False, "tags": {"a": [2]}}
    summary = summarize("Lead L-1", before, after)

    kept = json.loads(canonical_bytes([change.wire() for change in summary.changes]))
    read_back = [EffectChange.model_validate(change) for change in kept]

    assert summary == (
        "Lead L-1 price: 1 → 2.5; note: null → call back; open: true → false; "
        'tags: {"a":[2],"b":1} → {"a":[2]}'
    )
    assert summary == "Lead L-1 " + changes_text(read_back)


def test_a_value_json_can_not_write_is_shown_as_python_writes_it() -> None:
    assert value_text(float("nan")) == "nan"
    assert value_text(10**400) == str(10**400)
