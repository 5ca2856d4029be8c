"""The CRM as a journal-aware MCP server: deals, orders and a pipeline export (protocol.md §2 table).

Every summary is written from the values read from and written to the store, never from the
agent's arguments (protocol.md §3).
"""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from fastmcp import FastMCP
from pydantic import BaseModel
from sqlmodel import col, select

from hatp_journal.toolkit import (
    Effect,
    Journal,
    ResourceState,
    SigningKey,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    compensates,
    create_store_engine,
    irreversible,
    read_only,
    summarize,
    undoable,
)
from hatp_journal.toolkit.wire import Money, Use, utc_now, wire_time

from .moves import MOVE_TOOLS
from .store import (
    SERVER,
    STAGES,
    Charge,
    Deal,
    Order,
    Refund,
    check_stage,
    deal_fields,
    deal_state,
    deal_uri,
    deal_view,
    load_deal,
    load_order,
    money_text,
    order_fields,
    order_uri,
    parse_amount,
    seed,
    write_deal,
    write_order,
)
from .testing import TESTING_HOOKS

AGENT = "agent"
UNDO = "undo"
REFUND_FEE = Money(amount="2.50", currency="USD")


class StageUndo(BaseModel):
    """What undoing a stage change needs: the deal and the stage to put back."""

    deal_id: str
    stage: str


class ChargeUndo(BaseModel):
    """What refunding a charge needs."""

    order_id: str
    charge_id: str


@undoable(window="P7D")
def update_deal(deal_id: str, stage: str, tx: Tx) -> Effect:
    """Move a deal to another stage: Prospecting, Qualification, Proposal, Negotiation, Won or Lost."""
    deal = load_deal(tx.session, deal_id)
    old = deal.stage
    new = check_stage(stage)
    if new == old:
        # Nothing changes; the undo (if ever run) is a no-op at the same version.
        before = after = (deal.version, deal.etag)
    else:
        was, now = write_deal(tx.session, deal, {"stage": new}, AGENT, tx.now)
        before, after = (was.version, was.etag), (now.version, now.etag)
    return Effect(
        result=deal_view(deal),
        summary=summarize(f"Deal {deal.id}", {"stage": old}, {"stage": deal.stage}),
        resource=deal_uri(deal.id),
        before=before[0],
        version=after[0],
        before_etag=before[1],
        etag=after[1],
        fields=deal_fields(deal),
        uses=[Use(resource=deal_uri(deal.id), version=before[0])],
        undo=StageUndo(deal_id=deal.id, stage=old),
    )


@compensates(update_deal, state=deal_state)
def restore_stage(payload: StageUndo, tx: Tx) -> Undone:
    """Put the previous stage back (a new version whose content equals the earlier one)."""
    deal = load_deal(tx.session, payload.deal_id)
    if deal.stage == payload.stage:
        return Undone(version=deal.version)
    _, after = write_deal(tx.session, deal, {"stage": payload.stage}, UNDO, tx.now)
    return Undone(version=after.version)


@undoable(window="P1D", cost=REFUND_FEE, charges=True)
def charge_order(order_id: str, amount: str, currency: str, tx: Tx) -> Effect:
    """Charge the customer for an order (up to the amount still due). Undo refunds it for a 2.50 USD fee."""
    order = load_order(tx.session, order_id)
    value = parse_amount(amount)
    if currency.strip().upper() != order.currency:
        raise ToolFailed(
            f"order {order.id} is billed in {order.currency}", field="currency", allowed=[order.currency]
        )
    due = Decimal(order.total) - Decimal(order.paid)
    if value > due:
        raise ToolFailed(
            f"order {order.id} has {money_text(due)} {order.currency} due",
            field="amount",
            due=money_text(due),
        )
    charge = Charge(
        id=f"ch_{secrets.token_hex(6)}",
        order_id=order.id,
        amount=money_text(value),
        currency=order.currency,
        charged_at=wire_time(tx.now),
    )
    tx.session.add(charge)
    old_status, paid = order.status, Decimal(order.paid) + value
    status = "paid" if paid == Decimal(order.total) else "partly paid"
    before, after = write_order(
        tx.session, order, {"paid": money_text(paid), "status": status}, AGENT, tx.now
    )
    result = {"order": order.id, "charge": charge.id, "amount": charge.amount, "currency": charge.currency}
    result |= {"status": order.status, "paid": order.paid, "total": order.total}
    return Effect(
        result=result,
        summary=f"Order {order.id} ({order.account}) charged {charge.amount} {charge.currency}; "
        f"status: {old_status} → {order.status}",
        resource=order_uri(order.id),
        before=before.version,
        version=after.version,
        # No before_etag and no changes: a refund leaves the order "refunded", not as it was, so
        # the toolkit must not verify the undo against the pre-charge content, nor the Recorder
        # show the undo as the status turned back.
        etag=after.etag,
        fields=order_fields(order),
        amount=Money(amount=charge.amount, currency=charge.currency),
        undo=ChargeUndo(order_id=order.id, charge_id=charge.id),
    )


def order_state(resource: str, tx: Tx) -> ResourceState:
    """The order behind ``crm://acme/order/<id>`` as stored now."""
    order = tx.session.get(Order, resource.rsplit("/", 1)[-1])
    if order is None:
        return ResourceState(version=None)
    return order.state(order_fields(order))


@compensates(charge_order, state=order_state)
def refund_charge(payload: ChargeUndo, tx: Tx) -> Undone:
    """Refund the charge; the refund fee is recorded with it."""
    charge = tx.session.get(Charge, payload.charge_id)
    if charge is None or charge.status != "charged":
        raise UndoFailed(f"charge {payload.charge_id} is not refundable", charge=payload.charge_id)
    order = load_order(tx.session, payload.order_id)
    paid = Decimal(order.paid) - Decimal(charge.amount)
    status = "refunded" if paid == 0 else "partly paid"
    _, after = write_order(tx.session, order, {"paid": money_text(paid), "status": status}, UNDO, tx.now)
    charge.status = "refunded"
    refund = Refund(
        id=f"rf_{secrets.token_hex(6)}",
        charge_id=charge.id,
        order_id=order.id,
        amount=charge.amount,
        currency=charge.currency,
        fee=REFUND_FEE.amount,
        fee_currency=REFUND_FEE.currency,
        refunded_at=wire_time(tx.now),
    )
    tx.session.add_all([charge, refund])
    return Undone(
        version=after.version,
        side_effects=[
            f"refunded {refund.amount} {refund.currency} to {order.account} for order {order.id}",
            f"refund fee {refund.fee} {refund.fee_currency}",
        ],
        evidence=[f"refund {refund.id} of charge {charge.id}"],
    )


@read_only()
def get_deal(deal_id: str, tx: Tx) -> Effect:
    """Read one deal: name, account, stage, amount, owner, version and who changed it last."""
    deal = load_deal(tx.session, deal_id)
    uri = deal_uri(deal.id)
    return Effect(
        result=deal_view(deal),
        summary=f"Read deal {deal.id}: stage {deal.stage} ({deal.version})",
        resource=uri,
        version=deal.version,
        uses=[Use(resource=uri, version=deal.version)],
    )


@read_only()
def list_deals(tx: Tx, stage: str | None = None) -> Effect:
    """List deals, optionally only those at one stage."""
    deals = _deals(tx, stage)
    return Effect(
        result={"deals": [deal_view(deal) for deal in deals]},
        summary=f"Listed {len(deals)} deal(s)" + (f" at stage {deals[0].stage}" if stage and deals else ""),
        resource=f"{SERVER}/deals",
        uses=[Use(resource=deal_uri(deal.id), version=deal.version) for deal in deals],
    )


@irreversible(
    reason="discloses data outside the organisation",
    remedy="ask the recipients to delete the exported report",
    read=True,
)
def export_report(tx: Tx, stage: str | None = None) -> Effect:
    """Export the pipeline (optionally one stage) as CSV text for sharing outside Acme."""
    deals = _deals(tx, stage)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "name", "account", "stage", "amount", "currency", "owner"])
    for deal in deals:
        writer.writerow(
            [deal.id, deal.name, deal.account, deal.stage, deal.amount, deal.currency, deal.owner]
        )
    return Effect(
        result={"format": "text/csv", "rows": len(deals), "csv": out.getvalue()},
        summary=f"Exported the pipeline report: {len(deals)} deal(s) as CSV",
        resource=f"{SERVER}/report/pipeline",
        uses=[Use(resource=deal_uri(deal.id), version=deal.version) for deal in deals],
    )


def _deals(tx: Tx, stage: str | None) -> list[Deal]:
    query = select(Deal).order_by(col(Deal.id))
    if stage is not None:
        query = query.where(col(Deal.stage) == check_stage(stage))
    return list(tx.session.exec(query).all())


TOOLS = (
    update_deal,
    restore_stage,
    *MOVE_TOOLS,
    charge_order,
    refund_charge,
    get_deal,
    list_deals,
    export_report,
)

INSTRUCTIONS = (
    "Acme's CRM. Deals move through the stages " + ", ".join(STAGES) + ". update_deal, charge_order "
    "and move_amount can be undone for a while (see each tool's hatp/journal declaration); export_report "
    "cannot."
)


def build(
    db: Path | str, key: SigningKey, clock: Callable[[], datetime] | None = None
) -> tuple[FastMCP, Journal]:
    """The CRM server and its journal over the SQLite file ``db`` (seeded on first use)."""
    mcp = FastMCP("hatp-crm", instructions=INSTRUCTIONS)
    journal = Journal(SERVER, key=key, store=create_store_engine(db), clock=clock or utc_now)
    # The testing hooks are published only in testing mode (HATP_JOURNAL_TESTING=1).
    journal.register(mcp, *TOOLS, *TESTING_HOOKS)
    seed(journal.engine, journal.now())
    return mcp, journal
