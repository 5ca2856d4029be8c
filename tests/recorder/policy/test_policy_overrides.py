"""Overrides lift (or hold back) one operation for calls at or after their ``from`` time, never before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hatp_journal.recorder.policy import CallFacts, Decision, MoneyLedger, Policy, decide, parse_policy
from hatp_journal.toolkit.wire import Money

FROM = datetime(2026, 11, 1, tzinfo=UTC)


def policy_with(*overrides: str, money: str = "") -> Policy:
    autonomy = '{"compensate": "allow", "read": "allow"' + (f', "money": {money}' if money else "") + "}"
    return parse_policy(f'{{"autonomy": {autonomy}, "overrides": [{", ".join(overrides)}]}}')


def override(tool: str, action: str, start: str = "2026-11-01T00:00:00Z", server: str = "crm") -> str:
    return (
        f'{{"server": "{server}", "tool": "{tool}", "action": "{action}", "from": "{start}", '
        '"by": "human://acme.com/person/olivia", "reason": "board export"}'
    )


def export(at: datetime, **changes: object) -> CallFacts:
    base: dict[str, object] = {"run": "r", "server": "crm", "tool": "export_report", "kind": "none", "at": at}
    return CallFacts(**(base | changes))  # type: ignore[arg-type]


def outcome(decision: Decision) -> tuple[str, list[str]]:
    return decision.action, [reason.code for reason in decision.reasons]


def test_an_override_allows_export_report_for_calls_made_at_or_after_its_start() -> None:
    policy = policy_with(override("export_report", "allow"))

    assert outcome(decide(policy, export(FROM), MoneyLedger())) == ("allow", ["OVERRIDE"])
    assert outcome(decide(policy, export(FROM + timedelta(days=30)), MoneyLedger())) == (
        "allow",
        ["OVERRIDE"],
    )


def test_an_override_never_reaches_calls_made_before_its_start() -> None:
    policy = policy_with(override("export_report", "allow"))

    assert outcome(decide(policy, export(FROM - timedelta(seconds=1)), MoneyLedger())) == (
        "ask",
        ["IRREVERSIBLE"],
    )


def test_an_override_says_who_decided_it_and_from_when() -> None:
    decision = decide(policy_with(override("export_report", "allow")), export(FROM), MoneyLedger())

    assert decision.reasons[0].data == {
        "action": "allow",
        "by": "human://acme.com/person/olivia",
        "reason": "board export",
        "from": "2026-11-01T00:00:00Z",
    }


def test_an_override_applies_only_to_its_own_server_and_tool() -> None:
    policy = policy_with(override("export_report", "allow"))

    assert outcome(decide(policy, export(FROM, server="erp"), MoneyLedger()))[0] == "ask"
    assert outcome(decide(policy, export(FROM, tool="send_email"), MoneyLedger()))[0] == "ask"


def test_an_override_can_hold_back_an_operation_the_policy_would_allow() -> None:
    policy = policy_with(override("update_deal", "ask"))
    call = export(FROM, tool="update_deal", kind="compensate", via="api", window_seconds=604800)

    assert outcome(decide(policy, call, MoneyLedger())) == ("ask", ["OVERRIDE"])


def test_the_override_with_the_latest_start_wins_whatever_its_place_in_the_file() -> None:
    later_ask = override("export_report", "ask", "2026-11-10T00:00:00Z")
    earlier_allow = override("export_report", "allow", "2026-11-01T00:00:00Z")
    policy = policy_with(later_ask, earlier_allow)

    assert decide(policy, export(datetime(2026, 11, 5, tzinfo=UTC)), MoneyLedger()).action == "allow"
    assert decide(policy, export(datetime(2026, 11, 10, tzinfo=UTC)), MoneyLedger()).action == "ask"


def test_between_overrides_with_the_same_start_the_one_written_later_wins() -> None:
    policy = policy_with(override("export_report", "allow"), override("export_report", "ask"))

    assert decide(policy, export(FROM), MoneyLedger()).action == "ask"


def test_an_override_lifts_ui_undo_short_windows_and_missing_verification_together() -> None:
    policy = parse_policy(
        '{"autonomy": {"compensate": "allow", "minWindowSeconds": 259200, "requireVerified": true},'
        f' "overrides": [{override("archive_note", "allow", server="fakeapp")}]}}'
    )
    call = export(FROM, server="fakeapp", tool="archive_note", kind="compensate", via="ui", window_seconds=60)

    assert outcome(decide(policy, call, MoneyLedger())) == ("allow", ["OVERRIDE"])


def test_an_override_does_not_lift_the_money_caps() -> None:
    policy = policy_with(
        override("charge_order", "allow"), money='{"perRun": {"amount": "10", "currency": "USD"}}'
    )
    call = export(FROM, tool="charge_order", charges=True, amount=Money(amount="11", currency="USD"))

    assert outcome(decide(policy, call, MoneyLedger())) == ("ask", ["OVERRIDE", "MONEY_PER_RUN"])


def test_an_override_does_not_lift_facts_the_recorder_could_not_classify() -> None:
    policy = policy_with(override("export_report", "allow"))

    assert outcome(decide(policy, export(FROM, kind="maybe"), MoneyLedger())) == ("ask", ["UNCLASSIFIED"])
