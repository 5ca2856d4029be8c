"""Links read a call's body through a typed view (issue 29): a member that does not fit counts as
absent, never a crash, and a call whose recorded links can't be read is linked again as when it was
journaled."""

from __future__ import annotations

from typing import Any

from hatp_journal.recorder.changes.links import LinkedCall, LinkIndex, dependencies, inferred
from hatp_journal.recorder.record import Entry

VERIFIED = {"status": "verified", "kind": "compensate"}


def entry(number: int, body: dict[str, Any], kind: str = "call") -> Entry:
    return Entry(
        id=f"e{number}",
        run="r1",
        seq=number,
        time="2026-12-04T12:00:00Z",
        kind=kind,
        body=body,
        prev_hash="",
        hash="",
    )


def wrote(resource: str, **more: Any) -> dict[str, Any]:
    return {
        "server": "crm",
        "tool": "update",
        "arguments": {"deal": resource},
        "intake": VERIFIED,
        "journal": {"effect": {"resource": resource, **more}},
        "outcome": {"status": "ok"},
    }


def test_a_recorded_link_without_on_is_skipped_rather_than_crashing_the_plan() -> None:
    first = entry(1, wrote("crm://deal/D-1"))
    second = entry(
        2, {**wrote("crm://deal/D-2"), "links": [{"source": "declared"}, {"on": "e1", "source": "host"}]}
    )
    assert dependencies([first, second]) == {"e1": set(), "e2": {"e1"}}


def test_links_of_the_wrong_shape_are_linked_again_as_when_the_call_was_journaled() -> None:
    first = entry(1, wrote("crm://deal/D-1"))
    unaware = {"server": "crm", "tool": "poke", "arguments": {}, "outcome": {"status": "ok"}, "links": "e1"}
    assert dependencies([first, entry(2, unaware)]) == {"e1": set(), "e2": {"e1"}}  # the default link


def test_members_of_the_wrong_type_count_as_absent() -> None:
    odd = {
        "intake": ["verified"],
        "journal": {"effect": {"resource": 7, "also": "crm://x", "uses": {"resource": "crm://y"}}},
        "host": {"uses": "e1"},
        "hostUndo": "yes",
        "outcome": 200,
        "arguments": {"deal": ["crm://deal/D-1"]},
    }
    linked = LinkedCall.of(odd)
    assert (linked.intake, linked.outcome, linked.host_written()) == (None, None, None)
    index = LinkIndex()
    index.add("e1", LinkedCall.of(wrote("crm://deal/D-1")))
    assert index.links(linked) == [
        {"on": "e1", "source": "inferred", "via": "crm://deal/D-1"},
        {"on": "e1", "source": "default", "via": "everything earlier"},
    ]


def test_a_confirmation_of_the_wrong_shape_confirms_nothing() -> None:
    first, second = entry(1, wrote("crm://deal/D-1")), entry(2, wrote("crm://deal/D-2"))
    confirmation = entry(3, {"source": "confirmed", "entry": "e2", "on": ["e1"]}, kind="link")
    assert dependencies([first, second, confirmation]) == {"e1": set(), "e2": set()}


def test_inferred_links_of_the_wrong_shape_are_not_shown() -> None:
    body = {
        **wrote("crm://deal/D-2"),
        "links": [{"source": "inferred"}, {"on": "e1", "source": "inferred", "via": 5}],
    }
    assert [(link.on, link.via) for link in inferred([entry(2, body)])] == [("e1", "5")]
