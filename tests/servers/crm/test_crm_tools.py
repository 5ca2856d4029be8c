"""The CRM's tools through a real in-memory MCP client: declarations, money, reads, bad input."""

from __future__ import annotations

import csv
import io

import pytest
from sqlmodel import Session, select

from hatp_journal.servers.crm import STAGES, edit_deal
from hatp_journal.servers.crm.store import Order, Refund

pytestmark = pytest.mark.anyio


async def test_each_tool_declares_its_undo_terms_as_the_spec_table_says(crm) -> None:
    declared = await crm.declarations()

    assert declared["update_deal"]["undo"]["kind"] == "compensate"
    assert declared["update_deal"]["undo"]["window"] == "P7D"
    charge = declared["charge_order"]
    assert (charge["undo"]["kind"], charge["undo"]["window"]) == ("compensate", "P1D")
    assert charge["undo"]["cost"] == {"amount": "2.50", "currency": "USD"}
    assert charge["charges"] is True
    export = declared["export_report"]
    assert (export["undo"]["kind"], export["read"]) == ("none", True)
    assert export["reason"] == "discloses data outside the organisation"
    assert export["remedy"]
    assert declared["get_deal"]["read"] is True
    assert "undo" not in declared["list_deals"]


async def test_a_colleagues_edit_makes_the_undo_a_conflict_naming_stage_version_and_editor(crm) -> None:
    won = await crm.call("update_deal", deal_id="D-881", stage="Won")
    edit_deal(crm.journal.engine, "D-881", stage="Negotiation", by="eve@acme.com")

    conflict = await crm.compensate(won.journal)

    assert conflict.journal["code"] == "UNDO_CONFLICT"
    assert (conflict.journal["versionFound"], conflict.journal["changedBy"]) == ("v14", "eve@acme.com")
    assert conflict.journal["changes"] == [{"field": "stage", "expected": "Won", "now": "Negotiation"}]
    assert (await crm.deal())["stage"] == "Negotiation"


async def test_charge_order_states_its_amount_and_its_refund_reports_the_fee_and_the_refund(crm) -> None:
    charged = await crm.call("charge_order", order_id="O-1001", amount="1200.00", currency="USD")

    assert not charged.error
    assert charged.journal["effect"]["amount"] == {"amount": "1200.00", "currency": "USD"}
    assert (
        charged.journal["effect"]["summary"]
        == "Order O-1001 (Globex) charged 1200.00 USD; status: open → paid"
    )
    # A refund leaves the order "refunded": no changes, so no undo that reads "status: paid → open".
    assert "changes" not in charged.journal["effect"]
    assert charged.journal["undo"]["cost"] == {"amount": "2.50", "currency": "USD"}

    refund = await crm.compensate(charged.journal)

    assert refund.journal["status"] == "done"
    assert refund.journal["sideEffects"] == [
        "refunded 1200.00 USD to Globex for order O-1001",
        "refund fee 2.50 USD",
    ]
    with Session(crm.journal.engine) as session:
        order = session.get(Order, "O-1001")
        refunds = session.exec(select(Refund)).all()
    assert order is not None
    assert (order.status, order.paid) == ("refunded", "0.00")
    assert [(row.charge_id, row.amount, row.fee) for row in refunds] == [
        (charged.data["charge"], "1200.00", "2.50")
    ]


async def test_a_refund_after_its_one_day_window_is_refused_as_expired(crm, clock) -> None:
    charged = await crm.call("charge_order", order_id="O-1002", amount="100.00", currency="USD")
    clock.advance("P1DT1S")

    late = await crm.compensate(charged.journal)

    assert late.journal["code"] == "UNDO_EXPIRED"


async def test_charging_more_than_is_due_or_in_another_currency_fails_and_charges_nothing(crm) -> None:
    too_much = await crm.call("charge_order", order_id="O-1002", amount="350.01", currency="USD")
    wrong_currency = await crm.call("charge_order", order_id="O-1002", amount="10.00", currency="EUR")
    not_money = await crm.call("charge_order", order_id="O-1002", amount="ten", currency="USD")

    assert too_much.journal["error"]["code"] == "TOOL_FAILED"
    assert too_much.journal["error"]["data"]["due"] == "350.00"
    assert wrong_currency.journal["error"]["data"]["allowed"] == ["USD"]
    assert not_money.journal["error"]["data"]["field"] == "amount"
    with Session(crm.journal.engine) as session:
        order = session.get(Order, "O-1002")
    assert order is not None
    assert (order.paid, order.version) == ("0.00", "v1")


async def test_an_unknown_deal_fails_with_tool_failed_and_no_token(crm) -> None:
    reply = await crm.call("update_deal", deal_id="D-999", stage="Won")

    assert reply.error
    assert reply.journal["error"]["code"] == "TOOL_FAILED"
    assert reply.journal["error"]["data"]["field"] == "deal_id"
    assert reply.journal["error"]["data"]["reason"] == "not_found"
    assert "compensationToken" not in reply.journal


async def test_charging_an_unknown_order_fails_with_not_found_and_no_token(crm) -> None:
    reply = await crm.call("charge_order", order_id="O-9999", amount="10.00", currency="USD")

    assert reply.error
    assert reply.journal["error"]["code"] == "TOOL_FAILED"
    assert (reply.journal["error"]["data"]["field"], reply.journal["error"]["data"]["reason"]) == (
        "order_id",
        "not_found",
    )
    assert "compensationToken" not in reply.journal


async def test_an_invalid_stage_fails_listing_the_allowed_stages_and_changes_nothing(crm) -> None:
    reply = await crm.call("update_deal", deal_id="D-881", stage="Closed")

    assert reply.journal["error"]["code"] == "TOOL_FAILED"
    assert reply.journal["error"]["data"]["allowed"] == list(STAGES)
    assert (await crm.deal())["version"] == "v12"


async def test_moving_a_deal_to_its_current_stage_changes_nothing_and_its_undo_is_a_no_op(crm) -> None:
    same = await crm.call("update_deal", deal_id="D-881", stage="proposal")

    assert same.journal["effect"]["summary"] == "Deal D-881 unchanged"
    assert same.journal["effect"]["version"] == "v12"
    assert (await crm.compensate(same.journal)).journal["status"] == "done"
    assert (await crm.deal())["version"] == "v12"


async def test_reads_report_the_versions_they_used(crm) -> None:
    one = await crm.call("get_deal", deal_id="D-881")
    listed = await crm.call("list_deals", stage="Negotiation")

    assert one.journal["read"] is True
    assert one.journal["effect"]["uses"] == [{"resource": "crm://acme/deal/D-881", "version": "v12"}]
    assert [deal["id"] for deal in listed.data["deals"]] == ["D-882"]
    assert "compensationToken" not in listed.journal


async def test_export_report_is_declared_none_in_its_result_and_returns_the_pipeline_as_csv(crm) -> None:
    report = await crm.call("export_report")

    assert report.journal["undo"]["kind"] == "none"
    assert report.journal["reason"] == "discloses data outside the organisation"
    assert report.journal["remedy"]
    assert "compensationToken" not in report.journal
    rows = list(csv.DictReader(io.StringIO(report.data["csv"])))
    assert [(row["id"], row["stage"]) for row in rows] == [
        ("D-881", "Proposal"),
        ("D-882", "Negotiation"),
        ("D-883", "Qualification"),
    ]
