"""What approvers read an undo does: every field turned round, from the call's structured changes.

The words come from ``effect.changes`` as the Run Record keeps them (canonical JSON); a summary
that comes without them is turned round only when it holds a single change.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.chain_server import shelves, stock
from support.undo_org import DANA, Org

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.changes.plan import UNDO_VERBS, recorded_undo
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.undo import Step, steps_of, undo_label
from hatp_journal.toolkit import summarize
from hatp_journal.toolkit.versions import changes_text
from hatp_journal.toolkit.wire import EffectChange, EffectInfo

ARROW = " → "


def as_the_record_keeps(summary: str, changes: tuple[EffectChange, ...]) -> list[EffectChange]:
    """The changes as the Recorder reads them back: sent on the wire, kept canonical."""
    effect = EffectInfo(summary=summary, resource="x://1", changes=list(changes)).wire()
    kept: dict[str, Any] = json.loads(canonical_bytes(effect))
    return [EffectChange.model_validate(change) for change in kept["changes"]]


def test_undoing_a_two_field_change_turns_both_fields_round() -> None:
    summary = summarize("Shelf bolts", {"available": 10, "reserved": 0}, {"available": 6, "reserved": 4})

    undo = undo_label(summary, as_the_record_keeps(summary, summary.changes))

    assert undo == "Shelf bolts available: 6 → 10; reserved: 4 → 0"


def test_the_d881_change_reads_the_same_with_changes_as_without() -> None:
    summary = summarize("Deal D-881", {"stage": "Proposal"}, {"stage": "Won"})

    assert undo_label(summary, summary.changes) == "Deal D-881 stage: Won → Proposal"
    assert undo_label(str(summary)) == "Deal D-881 stage: Won → Proposal"


def test_a_summary_with_two_changes_and_no_structure_is_not_half_turned_round() -> None:
    summary = "Shelf bolts available: 10 → 6; reserved: 0 → 4"

    assert undo_label(summary) == f"Undo: {summary}"
    assert undo_label(summary, []) == f"Undo: {summary}"


def test_a_summary_with_one_arrow_after_other_words_and_no_structure_is_not_turned_round() -> None:
    summary = "Order O-1 (Globex) charged 1200.00 USD; status: open → paid"

    assert undo_label(summary) == f"Undo: {summary}"


def test_changes_a_summary_does_not_end_with_follow_the_summary_as_the_server_wrote_it() -> None:
    changes = [EffectChange(field="status", before="draft", after="deleted")]

    undo = undo_label("Deleted draft dr_1 to bob@globex.com: Hi", changes)

    assert undo == "Undo: Deleted draft dr_1 to bob@globex.com: Hi (status: deleted → draft)"


def test_a_summary_that_is_only_its_changes_turns_them_round() -> None:
    changes = [EffectChange(field="a", before=1, after=2), EffectChange(field="b", before="x", after=None)]

    assert undo_label("a: 1 → 2; b: x → null", changes) == "a: 2 → 1; b: null → x"


def test_a_summary_ending_in_the_changes_glued_to_a_word_is_not_cut_there() -> None:
    changes = [EffectChange(field="stage", before="A", after="B")]

    assert undo_label("Dealstage: A → B", changes) == "Undo: Dealstage: A → B (stage: B → A)"


def test_a_reversal_record_line_shows_its_own_words_and_an_older_line_its_summarys() -> None:
    words = "Shelf bolts available: 6 → 10; reserved: 4 → 0"
    older = {"summary": "Shelf bolts available: 10 → 6; reserved: 0 → 4", "status": "reversed"}

    assert recorded_undo({**older, "undo": words}) == words
    assert recorded_undo(older) == "Undo: Shelf bolts available: 10 → 6; reserved: 0 → 4"


def a_verified_call(effect: dict[str, Any]) -> Step:
    journal = {"server": "shop", "effect": effect}
    body = {"intake": {"status": "verified", "kind": "compensate"}, "journal": journal}
    entry = Entry(
        id="e1", run="r", seq=1, time="2026-11-07T18:00:00Z", kind="call", body=body, prev_hash="", hash=""
    )
    [step] = steps_of([entry])
    return step


def test_a_call_whose_recorded_changes_do_not_fit_the_wire_format_is_named_by_its_summary_alone() -> None:
    summary = "Shelf bolts available: 10 → 6; reserved: 0 → 4"
    step = a_verified_call({"summary": summary, "resource": "x://1", "changes": [{"name": "available"}]})

    assert step.changes is None
    assert step.undo_text == f"Undo: {summary}"


def test_a_call_with_recorded_changes_is_named_by_them_turned_round() -> None:
    summary = summarize("Shelf bolts", {"available": 10, "reserved": 0}, {"available": 6, "reserved": 4})
    effect = {"summary": summary, "resource": "x://1", "changes": [c.wire() for c in summary.changes]}

    assert a_verified_call(effect).undo_text == "Shelf bolts available: 6 → 10; reserved: 4 → 0"


# -- properties ------------------------------------------------------------------------------------

# Names and text values without the separators, so that the words can be read back into pairs.
plain_text = st.text(st.characters(exclude_characters=";:→", exclude_categories=("Cs",)), max_size=8)
field_names = plain_text
values = st.one_of(plain_text, st.integers(-(2**53) + 1, 2**53 - 1), st.none())
field_pairs = st.dictionaries(
    field_names, st.tuples(values, values).filter(lambda pair: pair[0] != pair[1]), min_size=1, max_size=6
)


def read_pairs(words: str) -> list[tuple[str, str, str]]:
    """``"a: 1 → 2; b: x → y"`` → ``[("a", "1", "2"), ("b", "x", "y")]``."""
    pairs = []
    for part in words.split("; "):
        name, _, values_ = part.partition(": ")
        old, arrow, new = values_.partition(ARROW)
        assert arrow, part
        pairs.append((name, old, new))
    return pairs


def shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@settings(max_examples=200, deadline=None)
@given(subject=st.text(max_size=20), pairs=field_pairs)
def test_the_undo_of_any_field_changes_is_exactly_each_pair_turned_round(
    subject: str, pairs: dict[str, tuple[Any, Any]]
) -> None:
    before = {name: old for name, (old, _) in pairs.items()}
    after = {name: new for name, (_, new) in pairs.items()}
    summary = summarize(subject, before, after)

    undo = undo_label(summary, as_the_record_keeps(summary, summary.changes))

    assert undo.startswith(f"{subject} ")
    turned = [(name, shown(new), shown(old)) for name, (old, new) in pairs.items()]
    assert read_pairs(undo.removeprefix(f"{subject} ")) == turned


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.text(max_size=10), min_size=3, max_size=6))
@example(pieces=["Remove", "", ""])  # found by a run: the verb's opposite, the arrows as they were
def test_a_summary_with_several_arrows_and_no_changes_is_never_turned_round(pieces: list[str]) -> None:
    summary = ARROW.join(pieces)
    # A first word with an opposite ("Remove →  → ") takes it; the arrows still stay as they were.
    verb = next((verb for verb in UNDO_VERBS if summary.startswith(verb + " ")), None)
    expected = UNDO_VERBS[verb] + summary.removeprefix(verb) if verb else f"Undo: {summary}"

    assert undo_label(summary) == expected


@settings(max_examples=200, deadline=None)
@given(pairs=field_pairs)
def test_turning_changes_round_twice_gives_the_changes_back(pairs: dict[str, tuple[Any, Any]]) -> None:
    changes = [EffectChange(field=name, before=old, after=new) for name, (old, new) in pairs.items()]
    turned = [EffectChange(field=c.field, before=c.after, after=c.before) for c in changes]

    assert changes_text(changes, undone=True) == changes_text(turned)


# -- through the Recorder ------------------------------------------------------------------------

UNDO = "Shelf bolts available: 6 → 10; reserved: 4 → 0"


def plan_and_undo(org: Org, run: str) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    """Plan undoing the run as text, approve it; (plan text, stored plan, approve's output, record)."""
    code, text, err = org.cli("plan", run, "--from", "1", "--by", DANA)
    assert code == 0, err
    [plan] = [entry for entry in org.entries(run) if entry.kind == "plan"]
    code, out, err = org.approve(f"{run}/{plan.id}")
    assert code == 0, err + out
    [reversal] = [entry for entry in org.entries(run) if entry.kind == "reversal"]
    return text, plan.body["plan"], out, reversal.body


def test_a_two_field_change_is_undone_in_words_that_turn_both_fields_round_everywhere(org: Org) -> None:
    stock(org.db(), "bolts", 10)
    run = org.agent([("chain_reserve", {"item": "bolts", "count": 4})])

    text, plan, out, record = plan_and_undo(org, run)

    assert f"\n  step 1  {UNDO}\n" in text
    assert [step["undo"] for step in plan["steps"]] == [UNDO]
    assert f"step 1  {UNDO}   (" in out
    assert [(step["status"], step["undo"]) for step in record["steps"]] == [("reversed", UNDO)]
    assert shelves(org.db()) == {"bolts": {"available": 10, "reserved": 0}}


def test_a_two_field_change_without_structure_is_shown_whole_and_still_undone(org: Org) -> None:
    stock(org.db(), "bolts", 10)
    run = org.agent([("chain_reserve_by_hand", {"item": "bolts", "count": 4})])

    text, plan, out, record = plan_and_undo(org, run)

    undo = "Undo: Shelf bolts available: 10 → 6; reserved: 0 → 4"
    assert f"\n  step 1  {undo}\n" in text
    assert [step["undo"] for step in plan["steps"]] == [undo]
    assert f"step 1  {undo}   (" in out
    assert [(step["status"], step["undo"]) for step in record["steps"]] == [("reversed", undo)]
    assert shelves(org.db()) == {"bolts": {"available": 10, "reserved": 0}}


def test_a_conflicting_two_field_change_is_named_by_its_undo_turned_round(org: Org) -> None:
    stock(org.db(), "bolts", 10)
    run = org.agent([("chain_reserve", {"item": "bolts", "count": 4})])
    org.agent([("chain_reserve", {"item": "bolts", "count": 1})], agent="other-bot")

    code, text, err = org.cli("plan", run, "--from", "1", "--by", DANA)

    assert code == 0, err
    assert f"Changed since (kept unless overridden):\n  step 1  {UNDO}" in text


def test_a_created_thing_whose_name_holds_an_arrow_is_cancelled_not_turned_round() -> None:
    summary = 'Create "Deal stage: Won → Lost review" on Nov 4'

    assert undo_label(summary) == 'Cancel "Deal stage: Won → Lost review" on Nov 4'
