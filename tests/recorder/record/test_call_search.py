"""The database keeps, of other runs' calls, those that may name a resource a plan would change;
it never leaves out one that names it, whatever characters the name holds."""

from __future__ import annotations

from typing import Any

from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.call_search import MAX_NAMES, calls_naming
from hatp_journal.toolkit import SigningKey

NAMES = ["D-881", 'say "hi"', "back\\slash", "line\nbreak", "tab\there", "ünïcode ✓", "bell\x07", "%_like"]


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"server": "crm", "tool": "read", "arguments": arguments, "outcome": "ok"}


def _stores(store_url: str) -> tuple[RunStore, str, str]:
    store = RunStore(store_url, SigningKey.generate())
    planning = store.open_run(agent="sales-bot", principal="dana").id
    other = store.open_run(agent="ops-bot", principal="lee").id
    return store, planning, other


def test_every_call_naming_a_name_is_found_whatever_its_characters(store_url: str) -> None:
    store, planning, other = _stores(store_url)
    for name in NAMES:
        store.append(other, "call", _call({"key": name}))
        store.append(other, "call", _call({"deep": [{"key": name}]}))
    store.append(planning, "call", _call({"key": "D-881"}))

    for name in NAMES:
        hits = calls_naming(store, [name], besides=planning)
        named = [entry.body["arguments"] for _, entry in hits]
        assert {"key": name} in named, name
        assert {"deep": [{"key": name}]} in named, name
        assert {run for run, _ in hits} == {other}  # the planning run's own calls are not read


def test_a_call_that_names_nothing_asked_for_is_left_out(store_url: str) -> None:
    store, planning, other = _stores(store_url)
    store.append(other, "call", _call({"key": "D-882"}))
    store.append(other, "note", {"text": "D-881"})  # not a call

    assert calls_naming(store, ["D-881"], besides=planning) == []


def test_more_names_than_the_search_takes_keeps_every_call(store_url: str) -> None:
    store, planning, other = _stores(store_url)
    store.append(other, "call", _call({"key": "D-882"}))

    hits = calls_naming(store, [f"n{i}" for i in range(MAX_NAMES + 1)], besides=planning)

    assert [entry.id for _, entry in hits] == ["e1"]
