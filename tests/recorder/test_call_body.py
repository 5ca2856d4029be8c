"""A call entry's body written without pydantic is the body CallRecord writes, member for member."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hatp_journal.recorder.gateway.call_body import call_wire, outcome
from hatp_journal.recorder.record.written_bodies import CallRecord, Outcome

ASKED: dict[str, Any] = {
    "agent": "agent://acme/bot",
    "principal": "human://acme.com/ana",
    "server": "crm",
    "tool": "update_deal",
    "arguments": {"deal_id": "D-881", "note": None, "tags": [None, {"x": None}]},
    "arguments_digest": "sha256:" + "0" * 64,
    "declared": "compensate",
    "host": None,
}
FORWARDED: dict[str, Any] = {
    "decision": {"action": "allow", "reasons": [], "policyDigest": "sha256:" + "1" * 64, "totals": None},
    "intake": {"status": "verified", "kind": "compensate"},
    "journal": {"v": 1, "effect": {"before": None}, "compensationTokenDigest": "sha256:" + "2" * 64},
    "host_undo": None,
    "links": [{"rel": "uses", "entry": "e1"}],
}
SHAPES = {
    "as asked": {},
    "without a digest or a host": {"arguments_digest": None, "host": {"uses": ["e2"]}},
    "forwarded, verified": FORWARDED,
    "forwarded, no journal came": {**FORWARDED, "journal": None, "links": []},
    "approved by a person": {"ask": "e7", "decision": {"action": "approved", "by": "human://acme.com/bo"}},
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("status", [None, ("ok", None), ("failed", "crm did not answer")])
def test_call_body_is_what_call_record_writes_in_the_same_order(
    shape: str, status: tuple[str, str | None] | None
) -> None:
    members = {**ASKED, **SHAPES[shape]}
    modelled = dict(members)
    if status is not None:
        members["outcome"] = outcome(*status)
        modelled["outcome"] = Outcome(status=status[0], error=status[1])
    written = call_wire(members)
    expected = CallRecord.model_construct(**modelled).wire()
    assert json.dumps(written) == json.dumps(expected)


def test_a_member_call_record_does_not_have_is_refused() -> None:
    with pytest.raises(TypeError):
        call_wire({**ASKED, "argumentsDigest": "sha256:" + "0" * 64})
