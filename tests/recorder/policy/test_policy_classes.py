"""Every call gets a reversibility class R0–R4 and the rule that gave it; a policy may speak classes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hatp_journal.recorder.policy import CallFacts, MoneyLedger, Policy, decide, load_policy, parse_policy
from hatp_journal.recorder.policy.decide import Decision
from hatp_journal.recorder.policy.registry import sql_identifier, sql_single_select
from hatp_journal.toolkit.wire import Declaration, Money

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).parents[3] / "docs" / "examples"
PEOPLE = EXAMPLES / "directory-classes.json"
OLIVIA = "human://acme.com/person/olivia"  # holds the data owner's role, the example's classAuthority
CLASSES = {"R0": "allow", "R1": "allow-notify", "R2": "ask-or-budget", "R3": "ask", "R4": "never-autonomous"}
SQLITE = {"db": "mcp-server-sqlite"}


def policy(money: dict[str, Any] | None = None, **more: Any) -> Policy:
    autonomy = {"classes": CLASSES, **({"money": money} if money else {})}
    body = {
        "autonomy": autonomy,
        "registry": {"servers": SQLITE},
        "classAuthority": "human://acme.com/role/data-owner",
    }
    return parse_policy(json.dumps({**body, **more}), directory=PEOPLE)


def declared(**fields: Any) -> Declaration:
    return Declaration.model_validate(fields)


def call(
    declaration: Declaration | None = None,
    *,
    server: str = "app",
    tool: str = "act",
    hints: dict[str, Any] | None = None,
    trusted: bool = False,
    keyed: bool = False,
    arguments: dict[str, Any] | None = None,
    amount: Money | None = None,
) -> CallFacts:
    """A call of a server the host trusts (``trusted``) and whose keys it pinned (``keyed``)."""
    return CallFacts.from_declaration(
        declaration,
        server=server,
        tool=tool,
        at=AT,
        annotations=None if hints is None else SimpleNamespace(**hints),
        trusted=trusted,
        arguments=arguments,
        amount=amount,
        run="run-1",
        server_keys=frozenset({"kid-1"}) if keyed else frozenset(),
        journal_aware=keyed,
    )


TRUSTED: dict[str, Any] = {"trusted": True, "keyed": True}
"""A journal-aware server with pinned keys that recorder.toml trusts: its declarations count."""


def decided(facts: CallFacts, on: Policy | None = None) -> Decision:
    return decide(on or policy(), facts, MoneyLedger())


def class_of(facts: CallFacts, on: Policy | None = None) -> tuple[str, str]:
    found = decided(facts, on).reversibility
    assert found is not None
    return found.rclass, found.rule


@pytest.mark.parametrize(
    ("declaration", "expected"),
    [
        ({"read": True}, ("R0", "declaration-read")),
        ({"undo": {"kind": "compensate", "window": "P7D"}}, ("R1", "declaration-compensate")),
        (
            {"undo": {"kind": "compensate", "sideEffects": ["attendees get a notice"]}},
            ("R2", "declaration-compensate-side-effects"),
        ),
        (
            {"undo": {"kind": "compensate", "cost": {"amount": "2.50", "currency": "USD"}}},
            ("R2", "declaration-compensate-side-effects"),
        ),
        ({"undo": {"kind": "compensate", "via": "ui"}}, ("R2", "declaration-via-ui")),
        (
            {"undo": {"kind": "none"}, "reason": "delivered to external recipients"},
            ("R4", "declaration-none"),
        ),
    ],
)
def test_a_declaration_gives_the_class_of_the_documented_table(
    declaration: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert class_of(call(declared(**declaration), **TRUSTED)) == expected


def test_a_tool_nothing_classifies_is_r4_unknown_and_never_autonomous() -> None:
    decision = decided(call())

    assert decision.reversibility is not None
    assert (decision.reversibility.rclass, decision.reversibility.rule) == ("R4", "unknown")
    assert [reason.code for reason in decision.reasons] == ["NEVER_AUTONOMOUS"]
    assert decision.action == "ask"


def test_a_read_only_hint_from_an_untrusted_server_changes_nothing() -> None:
    hints = {"readOnlyHint": True, "openWorldHint": False}

    assert class_of(call(hints=hints, trusted=False)) == ("R4", "unknown")
    assert class_of(call(hints=hints, trusted=True)) == ("R0", "mcp-hint-read-only")


@pytest.mark.parametrize(
    "hints",
    [
        {"readOnlyHint": True, "openWorldHint": False, "destructiveHint": True},
        {"readOnlyHint": True, "openWorldHint": True},
        {"readOnlyHint": True},  # an unsaid openWorldHint is not false
        {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
        {"readOnlyHint": "yes", "openWorldHint": False},  # a hint that is not a boolean says nothing
    ],
)
def test_destructive_or_open_world_hints_keep_a_trusted_tool_off_r0(hints: dict[str, Any]) -> None:
    assert class_of(call(hints=hints, trusted=True)) == ("R4", "unknown")


def test_a_registry_argument_rule_makes_a_single_select_r0_and_anything_else_stays_r4() -> None:
    select = call(server="db", tool="read_query", arguments={"query": "SELECT name FROM item"})
    sneaky = call(server="db", tool="read_query", arguments={"query": "SELECT 1; DROP TABLE item"})

    assert class_of(select) == ("R0", "registry-argument-rule")
    assert class_of(sneaky) == ("R4", "registry")
    evidence = decided(select).reversibility.evidence  # type: ignore[union-attr]
    assert evidence["version"] == "2025.4.25"
    assert evidence["source"] == "mcp_server_sqlite/server.py:346"


def test_an_existing_kind_policy_keeps_deciding_by_kind_and_still_records_the_class() -> None:
    kinds = parse_policy('{"autonomy": {"read": "allow", "unknown": "ask"}}')

    read = decided(call(declared(read=True), **TRUSTED), kinds)
    unknown = decided(call(), kinds)

    assert (read.action, unknown.action) == ("allow", "ask")
    assert [reason.code for reason in unknown.reasons] == ["UNKNOWN_UNDO"]
    assert read.reversibility is not None
    assert read.reversibility.rclass == "R0"


def test_r1_is_allowed_and_flagged_for_notice() -> None:
    decision = decided(call(declared(undo={"kind": "compensate"}), **TRUSTED))

    assert decision.action == "allow"
    assert [(reason.code, reason.data["class"]) for reason in decision.reasons] == [("NOTIFY", "R1")]


def test_r2_is_allowed_within_a_money_budget_and_asks_without_one() -> None:
    charge = declared(undo={"kind": "compensate", "sideEffects": ["a refund shows"]}, charges=True)
    budget = policy(money={"perRun": {"amount": "100", "currency": "USD"}})

    within = decided(call(charge, amount=Money(amount="40", currency="USD"), **TRUSTED), budget)
    unbudgeted = decided(call(declared(undo={"kind": "compensate", "via": "ui"}), **TRUSTED))

    assert within.action == "allow"
    assert [reason.code for reason in within.reasons] == ["WITHIN_BUDGET"]
    assert unbudgeted.action == "ask"
    assert "CLASS_ASKS" in [reason.code for reason in unbudgeted.reasons]


def test_an_override_that_allows_a_tool_does_not_lift_a_never_autonomous_class() -> None:
    lifted = policy(
        overrides=[
            {
                "server": "app",
                "tool": "act",
                "action": "allow",
                "from": "2026-01-01T00:00:00Z",
                "by": "o",
                "reason": "r",
            }
        ]
    )

    decision = decided(call(declared(undo={"kind": "none"}, reason="discloses data")), lifted)

    assert decision.action == "ask"
    assert "NEVER_AUTONOMOUS" in [reason.code for reason in decision.reasons]


def test_a_class_override_moves_a_class_with_its_reason_on_the_decision() -> None:
    lowered = policy(
        classOverrides=[
            {
                "server": "db",
                "tool": "write_query",
                "class": "R3",
                "by": OLIVIA,
                "reason": "nightly snapshots",
            },
            {"server": "db", "tool": "list_tables", "class": "R2", "by": "ops", "reason": "we count reads"},
        ]
    )

    write = decided(call(server="db", tool="write_query", arguments={"query": "DELETE FROM item"}), lowered)
    listing = decided(call(server="db", tool="list_tables"), lowered)

    assert write.reversibility is not None
    assert listing.reversibility is not None
    assert (write.reversibility.rclass, write.reversibility.rule) == ("R3", "override")
    assert write.reversibility.evidence["reason"] == "nightly snapshots"
    assert write.reversibility.evidence["baseClass"] == "R4"
    assert (listing.reversibility.rclass, listing.reversibility.rule) == ("R2", "override")


def test_a_class_override_cannot_lower_a_declared_disclosure() -> None:
    lowered = policy(
        classOverrides=[{"server": "crm", "tool": "export", "class": "R1", "by": OLIVIA, "reason": "r"}]
    )
    export = declared(read=True, undo={"kind": "none"}, reason="discloses data outside the organisation")

    found = decided(call(export, server="crm", tool="export"), lowered).reversibility

    assert found is not None
    assert (found.rclass, found.rule, found.disclosure) == ("R4", "override-refused", True)


@pytest.mark.parametrize(
    "query",
    ["SELECT * FROM item", "  select name from item where name = 'a;b'  ;", 'SELECT "drop" FROM t'],
)
def test_a_single_select_passes_the_sql_test(query: str) -> None:
    assert sql_single_select(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1; DROP TABLE item",
        "DELETE FROM item",
        "WITH x AS (SELECT 1) DELETE FROM item",
        "SELECT * INTO copy FROM item",
        "SELECT 1 -- ;\nDROP TABLE item",
        "SELECT 'unterminated",
        "COMMIT; SELECT 1",
        "",
    ],
)
def test_anything_but_a_single_select_fails_the_sql_test(query: str) -> None:
    assert not sql_single_select(query)


def test_only_a_plain_name_passes_the_identifier_test() -> None:
    assert sql_identifier("item_2")
    assert not sql_identifier("item); DROP TABLE x; --")
    assert not sql_identifier("2item")


def test_facts_with_a_class_that_is_none_of_r0_to_r4_ask_unclassified() -> None:
    from dataclasses import replace

    from hatp_journal.recorder.policy.classes import verdict

    bogus = verdict("R0", "unknown", "a bug in the gateway").model_copy(update={"rclass": "R9"})
    decision = decided(replace(call(declared(read=True)), reversibility=bogus))

    assert decision.action == "ask"
    assert "UNCLASSIFIED" in [reason.code for reason in decision.reasons]


def test_the_documented_class_policy_loads_and_decides_as_docs_policy_md_says() -> None:
    example = load_policy(EXAMPLES / "policy-classes.json", directory=PEOPLE)

    read = decided(call(server="files", tool="read_text_file", arguments={"path": "a.txt"}), example)
    write = decided(call(server="db", tool="write_query", arguments={"query": "DELETE FROM t"}), example)

    assert read.action == "allow"
    assert write.action == "ask"
    assert [reason.code for reason in write.reasons] == ["CLASS_ASKS"]
    assert write.reversibility is not None
    assert write.reversibility.evidence["reason"] == "nightly snapshots, kept 30 days"
