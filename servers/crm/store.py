"""The CRM's own tables (deals, orders, charges, refunds), its seed data and its colleague edits.

Every table lives in the journal's engine, so a tool's change and the toolkit's undo record commit
in one transaction. Table names start with ``crm_``: SQLModel metadata is shared by the process.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Field, Session, SQLModel, select

from hatp_journal.toolkit import ResourceState, Revision, ToolFailed, Tx, Versioned
from hatp_journal.toolkit.wire import utc_now, wire_time

from .constants import STAGES as STAGES  # re-exported; kept apart so the command line reads it cheaply

SERVER = "crm://acme"
ORDER_STATUSES = ("open", "partly paid", "paid", "refunded")


class Deal(Versioned, table=True):
    """A sales deal. ``version`` is the label people see; ``etag`` tags its content."""

    __tablename__ = "crm_deal"

    id: str = Field(primary_key=True)
    name: str
    account: str
    stage: str
    amount: str = Field(description="decimal string, e.g. 48000.00")
    currency: str = "USD"
    owner: str


class Order(Versioned, table=True):
    """An order that can be charged (in parts) up to its total."""

    __tablename__ = "crm_order"

    id: str = Field(primary_key=True)
    account: str
    description: str
    total: str
    currency: str
    paid: str = "0.00"
    status: str = "open"


class Charge(SQLModel, table=True):
    """One charge against an order; ``status`` becomes ``refunded`` when its undo ran."""

    __tablename__ = "crm_charge"

    id: str = Field(primary_key=True)
    order_id: str = Field(index=True)
    amount: str
    currency: str
    status: str = "charged"
    charged_at: str


class Refund(SQLModel, table=True):
    """A refund of one charge, with the fee the refund cost."""

    __tablename__ = "crm_refund"

    id: str = Field(primary_key=True)
    charge_id: str = Field(index=True)
    order_id: str
    amount: str
    currency: str
    fee: str
    fee_currency: str
    refunded_at: str


def deal_uri(deal_id: str) -> str:
    """The resource URI of a deal, e.g. ``crm://acme/deal/D-881``."""
    return f"{SERVER}/deal/{deal_id}"


def order_uri(order_id: str) -> str:
    """The resource URI of an order, e.g. ``crm://acme/order/O-1001``."""
    return f"{SERVER}/order/{order_id}"


def deal_fields(deal: Deal) -> dict[str, str]:
    """The fields a deal's content tag covers (and a conflict reports)."""
    return {
        "name": deal.name,
        "account": deal.account,
        "stage": deal.stage,
        "amount": deal.amount,
        "owner": deal.owner,
    }


def order_fields(order: Order) -> dict[str, str]:
    """The fields an order's content tag covers."""
    return {"status": order.status, "paid": order.paid, "total": order.total, "currency": order.currency}


def deal_state(resource: str, tx: Tx) -> ResourceState:
    """The deal behind ``crm://acme/deal/<id>`` as stored now, with who changed it last."""
    deal = tx.session.get(Deal, resource.rsplit("/", 1)[-1])
    if deal is None:
        return ResourceState(version=None)
    return deal.state(deal_fields(deal))


def deal_view(deal: Deal) -> dict[str, str]:
    """A deal as tools and the command line show it."""
    return {
        "id": deal.id,
        **deal_fields(deal),
        "currency": deal.currency,
        "version": deal.version,
        "changed_by": deal.changed_by,
        "changed_at": deal.changed_at,
    }


def check_stage(stage: str) -> str:
    """The canonical spelling of ``stage`` (case-insensitive), or ToolFailed listing the allowed ones."""
    for known in STAGES:
        if stage.strip().lower() == known.lower():
            return known
    raise ToolFailed(
        f"unknown stage {stage!r}; allowed: {', '.join(STAGES)}", field="stage", allowed=list(STAGES)
    )


def parse_amount(text: str, field: str = "amount") -> Decimal:
    """A positive amount with at most two decimals, e.g. ``"1200.00"``."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        value = Decimal(-1)
    if not value.is_finite() or value <= 0 or value != value.quantize(Decimal("0.01")):
        raise ToolFailed(f"{field} must be a positive decimal like 1200.00, not {text!r}", field=field)
    return value


def money_text(value: Decimal) -> str:
    """Two decimals, the way amounts are stored."""
    return f"{value:.2f}"


def load_deal(session: Session, deal_id: str) -> Deal:
    """The deal ``deal_id``, or ToolFailed (not found)."""
    deal = session.get(Deal, deal_id)
    if deal is None:
        raise ToolFailed(f"no deal {deal_id!r}", field="deal_id", reason="not_found")
    return deal


def load_order(session: Session, order_id: str) -> Order:
    """The order ``order_id``, or ToolFailed (not found)."""
    order = session.get(Order, order_id)
    if order is None:
        raise ToolFailed(f"no order {order_id!r}", field="order_id", reason="not_found")
    return order


def write_deal(
    session: Session, deal: Deal, changes: Mapping[str, str], by: str, now: datetime
) -> tuple[Revision, Revision]:
    """Apply ``changes``, bump the version and record who changed it; returns (before, after)."""
    for name, value in changes.items():
        setattr(deal, name, value)
    session.add(deal)
    return deal.record_change(deal_fields(deal), by=by, at=now)


def write_order(
    session: Session, order: Order, changes: Mapping[str, str], by: str, now: datetime
) -> tuple[Revision, Revision]:
    """Like :func:`write_deal`, for an order."""
    for name, value in changes.items():
        setattr(order, name, value)
    session.add(order)
    return order.record_change(order_fields(order), by=by, at=now)


def edit_deal(engine: Engine, deal_id: str, *, stage: str, by: str, now: datetime | None = None) -> Deal:
    """A colleague's edit outside any agent run (Eve moving D-881 to Negotiation).

    Writes through the same store and versioning as the tools, so a later undo sees the change
    and who made it. Raises ToolFailed for an unknown deal or stage.
    """
    if not by.strip():
        raise ToolFailed("say who is editing, e.g. by='eve@acme.com'", field="by")
    canonical = check_stage(stage)
    with Session(engine) as session:
        deal = load_deal(session, deal_id)
        write_deal(session, deal, {"stage": canonical}, by, now or utc_now())
        session.commit()
        session.refresh(deal)
        session.expunge(deal)
    return deal


def read_deal(engine: Engine, deal_id: str) -> Deal:
    """The deal as stored now (detached from any session)."""
    with Session(engine) as session:
        deal = load_deal(session, deal_id)
        session.expunge(deal)
    return deal


_SEED_DEALS: tuple[dict[str, Any], ...] = (
    # The D-881 story (protocol.md §0): at Proposal, version v12.
    {"id": "D-881", "name": "Globex — Q4 expansion", "account": "Globex", "stage": "Proposal",
     "amount": "48000.00", "owner": "dana@acme.com", "version": "v12"},
    {"id": "D-882", "name": "Initech — support renewal", "account": "Initech", "stage": "Negotiation",
     "amount": "12500.00", "owner": "eve@acme.com", "version": "v4"},
    {"id": "D-883", "name": "Umbrella — pilot", "account": "Umbrella", "stage": "Qualification",
     "amount": "7200.00", "owner": "dana@acme.com", "version": "v2"},
)  # fmt: skip

_SEED_ORDERS: tuple[dict[str, Any], ...] = (
    {"id": "O-1001", "account": "Globex", "description": "Q4 expansion — onboarding package",
     "total": "1200.00", "currency": "USD"},
    {"id": "O-1002", "account": "Initech", "description": "Support renewal — first quarter",
     "total": "350.00", "currency": "USD"},
)  # fmt: skip


def seed(engine: Engine, now: datetime | None = None) -> None:
    """Put the demo deals and orders in an empty store; a store that has any is left alone."""
    stamp = wire_time(now or utc_now())
    with Session(engine) as session:
        if session.exec(select(Deal).limit(1)).first() is None:
            for row in _SEED_DEALS:
                deal = Deal(**row, etag="", changed_by=row["owner"], changed_at=stamp)
                deal.etag = Revision.of(deal.version, deal_fields(deal)).etag
                session.add(deal)
        if session.exec(select(Order).limit(1)).first() is None:
            for row in _SEED_ORDERS:
                order = Order(**row, version="v1", etag="", changed_by="billing@acme.com", changed_at=stamp)
                order.etag = Revision.of(order.version, order_fields(order)).etag
                session.add(order)
        session.commit()
