"""A foreign server's ``effect.also`` at the Recorder's intake: a compensable call is undoable only if
every resource it names has a version, and an ``also`` that does not fit (empty, a resource named
twice, a version that is no text) leaves the call unresolved, never verified."""

from __future__ import annotations

from typing import Any

import pytest

from hatp_journal.recorder.intake.journal_objects import take_in
from hatp_journal.toolkit.signing import SigningKey, call_payload
from hatp_journal.toolkit.wire import META_KEY

KEY = SigningKey.generate()
ARGUMENTS = {"from_deal": "D-881", "to_deal": "D-882", "amount": "1.00"}


def signed(also: Any) -> dict[str, Any]:
    journal = {
        "protocol": "hatp-journal/0.3",
        "server": "crm://acme",
        "undo": {"kind": "compensate", "undoBy": "2026-11-08T09:00:00Z", "via": "api", "sideEffects": []},
        "compensationToken": "ctk_x",
        "effect": {
            "summary": "Deal amounts",
            "resource": "crm://acme/deal/D-881",
            "version": "v13",
            "before": "v12",
            "uses": [],
            "also": also,
        },
    }
    receipt = KEY.sign(call_payload(journal, "move_amount", ARGUMENTS), "2026-11-01T09:00:00Z")
    return {META_KEY: journal | {"receipt": receipt.wire()}}


def intake(also: Any) -> Any:
    return take_in(
        signed(also),
        tool="move_amount",
        arguments=ARGUMENTS,
        server_keys={KEY.kid: KEY.public},
        declared_kind="compensate",
    )


def test_a_call_naming_each_other_resource_with_its_version_is_verified_and_compensable() -> None:
    taken = intake([{"resource": "crm://acme/deal/D-882", "version": "v5", "before": "v4"}])

    assert (taken.status, taken.kind) == ("verified", "compensate")


def test_a_call_naming_another_resource_without_its_version_is_verified_but_not_undoable() -> None:
    taken = intake([{"resource": "crm://acme/deal/D-882", "before": "v4"}])

    assert (taken.status, taken.kind) == ("verified", "unknown")


@pytest.mark.parametrize(
    "also",
    [
        [],
        [{"resource": "crm://acme/deal/D-881", "version": "v2"}],
        [{"resource": "crm://acme/deal/D-882", "version": 5}],
        [{"resource": "crm://acme/deal/D-882", "version": ""}],
        {"resource": "crm://acme/deal/D-882", "version": "v5"},
    ],
)
def test_an_also_that_does_not_fit_the_wire_leaves_the_call_unresolved(also: Any) -> None:
    taken = intake(also)

    assert (taken.status, taken.kind) == ("unresolved", "unknown")
    assert taken.reason.startswith("journal object does not fit the wire format: effect")
