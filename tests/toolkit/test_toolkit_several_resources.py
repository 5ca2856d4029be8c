"""Effect.also in the toolkit: a call that names several resources, and the ways one can get it wrong.

A one-resource call is what it always was, byte for byte. An effect that names a resource twice,
gives a version that is not text, or versions a row it does not name fails and changes nothing;
one that names a resource without its version is not undoable; a compensation that forgets one of
them is unverified and rolled back. An undo store made before ``hatp_undo_write`` gains it and its
records still undo.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from sqlalchemy import text
from sqlmodel import Session, select

from hatp_journal.servers.crm.server import TOOLS
from hatp_journal.servers.crm.store import Deal, deal_state, deal_uri, load_deal, seed, write_deal
from hatp_journal.toolkit import (
    Effect,
    ResourceState,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    Write,
    compensates,
    undoable,
)
from hatp_journal.toolkit.signing import compensate_payload, prove_compensate
from hatp_journal.toolkit.store import UndoRecord, create_store_engine
from hatp_journal.toolkit.testing import JournalHarness
from hatp_journal.toolkit.wire import CompensateRequest, EffectInfo

D881, D882, D883 = deal_uri("D-881"), deal_uri("D-882"), deal_uri("D-883")


class Back(BaseModel):
    amounts: dict[str, str]


def _bump(tx: Tx, deal_id: str) -> tuple[Any, Any, Deal]:
    deal = load_deal(tx.session, deal_id)
    was, now = write_deal(tx.session, deal, {"amount": f"{Decimal(deal.amount) + 1:.2f}"}, "agent", tx.now)
    return was, now, deal


def _write(deal_id: str, was: Any, now: Any, **overrides: Any) -> Write:
    parts: dict[str, Any] = {
        "resource": deal_uri(deal_id),
        "before": was.version,
        "version": now.version,
        "etag": now.etag,
        "before_etag": was.etag,
    }
    return Write(**(parts | overrides))


def _effect(tx: Tx, also: list[Write], amounts: dict[str, str]) -> Effect:
    was, now, _ = _bump(tx, "D-881")
    return Effect(
        result={},
        summary="bumped",
        resource=D881,
        before=was.version,
        version=now.version,
        etag=now.etag,
        before_etag=was.etag,
        also=also,
        undo=Back(amounts=amounts),
    )


@undoable(window="P1D")
def names_one_twice(tx: Tx) -> Effect:
    was, now, _ = _bump(tx, "D-882")
    return _effect(tx, [_write("D-882", was, now), _write("D-882", was, now)], {})


@undoable(window="P1D")
def names_itself_again(tx: Tx) -> Effect:
    return _effect(tx, [Write(resource=D881, version="v99")], {})


@undoable(window="P1D")
def version_as_a_number(tx: Tx) -> Effect:
    was, _, _ = _bump(tx, "D-882")
    return _effect(tx, [_write("D-882", was, was, version=5, etag=None)], {})


@undoable(window="P1D")
def no_version_for_the_other(tx: Tx) -> Effect:
    was, _, _ = _bump(tx, "D-882")
    return _effect(tx, [_write("D-882", was, was, version=None, etag=None)], {})


@undoable(window="P1D")
def names_two_changes_three(tx: Tx) -> Effect:
    was, now, _ = _bump(tx, "D-882")
    _bump(tx, "D-883")  # the write it does not name
    return _effect(tx, [_write("D-882", was, now)], {})


@undoable(window="P1D")
def names_none_with_an_empty_list(tx: Tx) -> Effect:
    return _effect(tx, [], {"D-881": load_deal(tx.session, "D-881").amount})


@undoable(window="P1D")
def moves_and_forgets_one_on_undo(tx: Tx) -> Effect:
    old = {d: load_deal(tx.session, d).amount for d in ("D-881", "D-882")}
    was, now, _ = _bump(tx, "D-882")
    return _effect(tx, [_write("D-882", was, now)], old)


@undoable(window="P1D")
def moves_where_one_cannot_be_read(tx: Tx) -> Effect:
    was, now, _ = _bump(tx, "D-882")
    return _effect(tx, [_write("D-882", was, now)], {})


def d882_unreadable(resource: str, tx: Tx) -> ResourceState:
    if resource == D882:
        raise UndoFailed("the deals screen is down")
    return deal_state(resource, tx)


def _undo_all(payload: Back, tx: Tx) -> Undone:
    versions = []
    for deal_id, amount in payload.amounts.items():
        deal = load_deal(tx.session, deal_id)
        write_deal(tx.session, deal, {"amount": amount}, "undo", tx.now)
        versions.append(deal.version)
    return Undone(version=versions[0] if versions else None)


def _undo_first_only(payload: Back, tx: Tx) -> Undone:
    first = next(iter(payload.amounts.items()))
    return _undo_all(Back(amounts=dict([first])), tx)


LIARS = [
    (names_one_twice, _undo_all),
    (names_itself_again, _undo_all),
    (version_as_a_number, _undo_all),
    (no_version_for_the_other, _undo_all),
    (names_two_changes_three, _undo_all),
    (names_none_with_an_empty_list, _undo_all),
    (moves_and_forgets_one_on_undo, _undo_first_only),
]


def _compensation(tool: Any, undo: Any) -> Any:
    def compensation(payload: Back, tx: Tx) -> Undone:
        return undo(payload, tx)  # type: ignore[no-any-return]

    compensation.__name__ = f"undo_{tool.__name__}"
    return compensates(tool, state=deal_state)(compensation)


COMPENSATIONS = [_compensation(tool, undo) for tool, undo in LIARS]


@compensates(moves_where_one_cannot_be_read, state=d882_unreadable)
def never_runs(payload: Back, tx: Tx) -> Undone:
    raise AssertionError("the undo must not run when a resource can't be read")


@pytest.fixture
def crm(tmp_path: Path) -> JournalHarness:
    harness = JournalHarness(
        *TOOLS,
        *(tool for tool, _ in LIARS),
        *COMPENSATIONS,
        moves_where_one_cannot_be_read,
        never_runs,
        store=tmp_path / "crm.db",
        server="crm://acme",
    )
    seed(harness.journal.engine, harness.clock())
    return harness


def versions(crm: JournalHarness) -> dict[str, str]:
    with Session(crm.journal.engine) as session:
        return {deal.id: deal.version for deal in session.exec(select(Deal)).all()}


def records(crm: JournalHarness) -> int:
    with Session(crm.journal.engine) as session:
        return len(session.exec(select(UndoRecord)).all())


def test_a_one_resource_call_sends_no_also_and_its_answers_no_resources(crm: JournalHarness) -> None:
    call = crm.call("update_deal", deal_id="D-881", stage="Won")
    empty = crm.call("names_none_with_an_empty_list")

    assert "also" not in call.journal.wire()["effect"]
    assert "also" not in empty.journal.wire()["effect"]
    assert "resources" not in crm.check(call).wire()
    assert "resources" not in crm.undo(empty).wire()
    assert "ifVersions" not in compensate_payload("d", "v1", None, None)["compensate"]


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("names_one_twice", "names crm://acme/deal/D-882 twice"),
        ("names_itself_again", "names crm://acme/deal/D-881 twice"),
        ("version_as_a_number", "the version of crm://acme/deal/D-882 must be a non-empty string, not 5"),
        ("names_two_changes_three", "changed a crm_deal row now at v3, which its effect does not name"),
    ],
)
def test_an_effect_that_misnames_what_the_call_wrote_fails_it_and_changes_nothing(
    crm: JournalHarness, tool: str, said: str
) -> None:
    before = versions(crm)

    with pytest.raises(ToolFailed, match=said) as failed:
        crm.call(tool)

    assert failed.value.code == "TOOL_FAILED"
    assert versions(crm) == before
    assert records(crm) == 0


def test_another_resource_without_a_version_makes_the_call_not_undoable_naming_it(
    crm: JournalHarness,
) -> None:
    call = crm.call("no_version_for_the_other")

    assert call.journal.undo is not None
    assert call.journal.undo.kind == "unknown"
    assert call.journal.reason == "the server reported no version for crm://acme/deal/D-882"
    assert call.journal.compensation_token is None


def test_a_compensation_that_forgets_one_resource_is_unverified_naming_it_and_rolled_back(
    crm: JournalHarness,
) -> None:
    call = crm.call("moves_and_forgets_one_on_undo")
    moved = versions(crm)

    answer = crm.undo(call)

    assert (answer.status, answer.code) == ("unverified", "UNDO_UNVERIFIED")
    assert answer.message == f"after the undo {D882} does not match its state before the call"
    assert versions(crm) == moved


def test_another_resource_that_cannot_be_read_fails_check_and_undo_naming_it(crm: JournalHarness) -> None:
    call = crm.call("moves_where_one_cannot_be_read")
    moved = versions(crm)

    for answer in (crm.check(call), crm.undo(call)):
        assert (answer.status, answer.code) == ("failed", "UNDO_FAILED")
        assert answer.message == f"could not read {D882} to check it before undoing: the deals screen is down"
    assert versions(crm) == moved


def test_if_versions_is_the_version_the_other_resource_must_be_at(crm: JournalHarness) -> None:
    call = crm.call("move_amount", from_deal="D-881", to_deal="D-882", amount="1.00")

    stale = crm.undo(call, if_versions={D882: "v4"})
    done = crm.undo(call, request_id="again")

    assert (stale.status, [r.status for r in stale.resources or ()]) == ("conflict", ["ok", "conflict"])
    assert stale.message.startswith(f"{D882}: ")
    assert done.status == "done"
    assert [(r.resource, r.version_expected, r.version_left) for r in done.resources or ()] == [
        (D881, "v13", "v14"),
        (D882, "v5", "v6"),
    ]


def test_a_forged_if_versions_is_refused_as_unproven(crm: JournalHarness) -> None:
    call = crm.call("move_amount", from_deal="D-881", to_deal="D-882", amount="1.00")
    token = call.journal.compensation_token
    assert token is not None
    assert crm.recorder is not None
    proof = prove_compensate(crm.recorder, token, "v13", issued_at="2026-11-01T09:00:00Z")
    forged = CompensateRequest(token=token, if_version="v13", if_versions={D882: "v99"}, proof=proof)

    answer = crm.journal.compensate(forged)

    assert (answer.status, answer.code) == ("refused", "UNDO_NOT_AUTHORIZED")


@pytest.mark.parametrize(
    "also",
    [
        [],
        [{"resource": D881, "version": "v2"}],
        [{"resource": D882, "version": "v2"}, {"resource": D882, "version": "v3"}],
        [{"resource": D882, "version": ""}],
        [{"resource": D882, "version": 5}],
        [{"resource": "", "version": "v2"}],
    ],
)
def test_a_foreign_effect_with_an_empty_duplicate_or_unreadable_also_does_not_fit_the_wire(
    also: list[dict[str, Any]],
) -> None:
    with pytest.raises(ValidationError):
        EffectInfo.model_validate({"summary": "s", "resource": D881, "version": "v1", "also": also})


def test_an_undo_store_made_before_several_resources_gains_the_table_and_its_records_undo(
    tmp_path: Path,
) -> None:
    first = JournalHarness(*TOOLS, store=tmp_path / "crm.db", server="crm://acme")
    seed(first.journal.engine, first.clock())
    call = first.call("update_deal", deal_id="D-881", stage="Won")
    with first.journal.engine.begin() as connection:  # as version 2 left it
        connection.execute(text("DROP TABLE hatp_undo_write"))
        connection.execute(text("UPDATE hatp_schema SET version = 2 WHERE part = 'undo'"))
    first.journal.engine.dispose()

    engine = create_store_engine(tmp_path / "crm.db")
    again = JournalHarness(*TOOLS, store=engine, server="crm://acme", key=first.key, recorder=first.recorder)

    assert again.undo(call).status == "done"
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version FROM hatp_schema WHERE part = 'undo'")).scalar() == 3
    assert again.call("move_amount", from_deal="D-881", to_deal="D-882", amount="1.00").journal.effect
