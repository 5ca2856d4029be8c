"""The protocol.md §7 example policy (docs/examples/policy.json) decides the demo operations as it says."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hatp_journal.recorder.policy import (
    CallFacts,
    MoneyLedger,
    Policy,
    ReasonCode,
    decide,
    load_policy,
    parse_policy,
)
from hatp_journal.toolkit.wire import Declaration, Money, UndoDeclaration

EXAMPLE = Path(__file__).parents[3] / "docs" / "examples" / "policy.json"
NOV_3 = datetime(2026, 11, 3, 14, 2, 10, tzinfo=UTC)
DAY = 86400


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(EXAMPLE)


def facts(**changes: object) -> CallFacts:
    base: dict[str, object] = {
        "run": "run-1",
        "server": "crm",
        "tool": "update_deal",
        "kind": "compensate",
        "via": "api",
        "window_seconds": 7 * DAY,
        "at": NOV_3,
    }
    return CallFacts(**(base | changes))  # type: ignore[arg-type]


def codes(policy: Policy, call: CallFacts) -> tuple[str, list[str]]:
    decision = decide(policy, call, MoneyLedger())
    return decision.action, [reason.code for reason in decision.reasons]


def test_the_policy_shown_in_the_docs_is_the_example_file(policy: Policy) -> None:
    page = (EXAMPLE.parents[1] / "policy.md").read_text(encoding="utf-8")
    shown = re.search(r"```json\n(.*?)```", page, re.S)

    assert shown is not None
    assert parse_policy(shown.group(1), source="docs/policy.md") == policy


def test_the_documented_example_policy_file_loads(policy: Policy) -> None:
    assert policy.autonomy.min_window_seconds == 3 * DAY
    assert policy.autonomy.money.per_period is not None
    assert policy.autonomy.money.per_period.period == "P7D"


def test_a_compensate_call_with_a_seven_day_window_is_allowed(policy: Policy) -> None:
    assert codes(policy, facts()) == ("allow", [])


def test_a_compensate_call_with_a_one_day_window_asks_because_the_minimum_is_three_days(
    policy: Policy,
) -> None:
    decision = decide(policy, facts(tool="charge_order", window_seconds=DAY), MoneyLedger())

    assert decision.action == "ask"
    [why] = decision.reasons
    assert why.code == ReasonCode.WINDOW_TOO_SHORT
    assert why.data == {"windowSeconds": DAY, "minWindowSeconds": 3 * DAY}


def test_a_compensate_call_without_a_declared_window_asks_while_a_minimum_applies(policy: Policy) -> None:
    assert codes(policy, facts(window_seconds=None)) == ("ask", ["WINDOW_TOO_SHORT"])


def test_a_call_whose_undo_replays_through_a_user_interface_asks(policy: Policy) -> None:
    assert codes(policy, facts(server="fakeapp", tool="archive_note", via="ui")) == ("ask", ["UI_UNDO"])


def test_an_irreversible_call_asks(policy: Policy) -> None:
    call = facts(server="email", tool="send_email", kind="none", via=None, window_seconds=None)

    assert codes(policy, call) == ("ask", ["IRREVERSIBLE"])


def test_a_call_to_an_unaware_server_asks(policy: Policy) -> None:
    call = facts(server="plain", tool="do_thing", kind="unknown", via=None, window_seconds=None)

    assert codes(policy, call) == ("ask", ["UNKNOWN_UNDO"])


def test_a_read_is_allowed(policy: Policy) -> None:
    assert codes(policy, facts(tool="get_deal", kind="read", via=None, window_seconds=None)) == ("allow", [])


def test_require_verified_holds_a_declared_but_unverified_compensation(policy: Policy) -> None:
    strict = policy.model_copy(
        update={"autonomy": policy.autonomy.model_copy(update={"require_verified": True})}
    )

    assert codes(strict, facts(verified=False)) == ("ask", ["NOT_VERIFIED"])
    assert codes(strict, facts(verified=True)) == ("allow", [])
    # Verification is about undo: reads are not held by it.
    assert codes(strict, facts(kind="read", via=None, window_seconds=None)) == ("allow", [])


def test_every_decision_carries_the_digest_of_the_policy_that_made_it(policy: Policy) -> None:
    decision = decide(policy, facts(), MoneyLedger())

    assert decision.policy_digest == policy.digest()
    assert decision.policy_digest.startswith("sha256:")
    assert decision.wire()["policyDigest"] == policy.digest()


@pytest.mark.parametrize(
    ("declaration", "kind", "window"),
    [
        (
            Declaration(undo=UndoDeclaration(kind="compensate", window="P7D", window_seconds=7 * DAY)),
            "compensate",
            7 * DAY,
        ),
        (Declaration(read=True), "read", None),
        (Declaration(read=True, undo=UndoDeclaration(kind="none"), reason="discloses data"), "none", None),
        (Declaration(undo=UndoDeclaration(kind="none"), reason="delivered"), "none", None),
        (Declaration(), "unknown", None),
        (None, "unknown", None),
        # Two windows that disagree: the shorter one counts.
        (
            Declaration(undo=UndoDeclaration(kind="compensate", window="P1D", window_seconds=7 * DAY)),
            "compensate",
            DAY,
        ),
    ],
)
def test_call_facts_classify_a_declaration_as_the_spec_says(
    declaration: Declaration | None, kind: str, window: int | None
) -> None:
    call = CallFacts.from_declaration(declaration, run="r", server="crm", tool="t", at=NOV_3)

    assert (call.kind, call.window_seconds) == (kind, window)


def test_an_export_that_cannot_be_taken_back_asks_even_though_it_only_reads(policy: Policy) -> None:
    declaration = Declaration(read=True, undo=UndoDeclaration(kind="none"), reason="discloses data")
    before_override = datetime(2026, 10, 1, tzinfo=UTC)
    call = CallFacts.from_declaration(
        declaration, run="r", server="crm", tool="export_report", at=before_override
    )

    assert codes(policy, call) == ("ask", ["IRREVERSIBLE"])


def test_a_charging_declaration_passes_its_amount_to_the_money_caps(policy: Policy) -> None:
    declaration = Declaration(
        undo=UndoDeclaration(
            kind="compensate", window_seconds=7 * DAY, cost=Money(amount="2.50", currency="USD")
        ),
        charges=True,
    )
    call = CallFacts.from_declaration(
        declaration,
        run="r",
        server="shop",
        tool="charge_order",
        at=NOV_3,
        amount=Money(amount="501", currency="USD"),
    )

    assert codes(policy, call) == ("ask", ["MONEY_PER_RUN"])
