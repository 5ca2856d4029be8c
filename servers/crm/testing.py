"""The CRM's hooks for the conformance suite's test-only surface (``docs/conformance.md``).

Published only in testing mode (``HATP_JOURNAL_TESTING=1``). Samples spell their arguments as an
agent might (lower case, padded, ``usd``) so that a summary written from the arguments would show.
"""

from __future__ import annotations

from decimal import Decimal

from sqlmodel import select

from hatp_journal.toolkit import Tx
from hatp_journal.toolkit.testing import Sample, outside_edit_for, sample_for

from .store import (
    STAGES,
    Deal,
    deal_uri,
    load_deal,
    load_order,
    money_text,
    order_uri,
    write_deal,
    write_order,
)

SAMPLE_DEAL = "D-883"
SAMPLE_ORDER = "O-1002"
COLLEAGUE = "eve@acme.com"
BILLING = "billing@acme.com"


@sample_for("update_deal")
def next_stage(tx: Tx) -> Sample:
    """Move D-883 to the stage after its current one, spelled ``"  negotiation "``."""
    deal = load_deal(tx.session, SAMPLE_DEAL)
    target = STAGES[(STAGES.index(deal.stage) + 1) % len(STAGES)]
    return Sample(
        arguments={"deal_id": deal.id, "stage": f"  {target.lower()} "},
        resource=deal_uri(deal.id),
        shows=[f"→ {target}"],
        hides=[target.lower()],
    )


@outside_edit_for("update_deal")
def eve_moves_the_deal(resource: str, tx: Tx) -> None:
    """Eve moves the deal to another stage in the CRM's own screens."""
    deal = load_deal(tx.session, resource.rsplit("/", 1)[-1])
    other = "Negotiation" if deal.stage != "Negotiation" else "Lost"
    write_deal(tx.session, deal, {"stage": other}, COLLEAGUE, tx.now)


@sample_for("move_amount")
def move_a_little(tx: Tx) -> Sample:
    """Move ``" 1.5 "`` from D-882 to D-883; stored as 1.50 off one deal and onto the other."""
    source, target = load_deal(tx.session, "D-882"), load_deal(tx.session, SAMPLE_DEAL)
    left = money_text(Decimal(source.amount) - Decimal("1.50"))
    return Sample(
        arguments={"from_deal": source.id, "to_deal": target.id, "amount": " 1.5 "},
        resource=deal_uri(source.id),
        also=[deal_uri(target.id)],
        shows=[f"{source.id}: {source.amount} → {left}"],
        hides=[" 1.5 "],
    )


@outside_edit_for("move_amount")
def eve_moves_a_deal_of_the_move(resource: str, tx: Tx) -> None:
    """Eve moves either deal of the move to another stage."""
    eve_moves_the_deal(resource, tx)


@sample_for("charge_order")
def small_charge(tx: Tx) -> Sample:
    """Charge O-1002 a small amount written ``" 1.5 "`` in ``" usd"``; stored as ``1.50 USD``."""
    order = load_order(tx.session, SAMPLE_ORDER)
    return Sample(
        arguments={"order_id": order.id, "amount": " 1.5 ", "currency": " usd"},
        resource=order_uri(order.id),
        shows=["charged 1.50 USD"],
        hides=["usd", " 1.5 "],
        # A refund leaves the order "refunded" (or "partly paid"), not "open": that is the record of it.
        undo_may_differ=["status"],
    )


@outside_edit_for("charge_order")
def billing_raises_the_total(resource: str, tx: Tx) -> None:
    """Billing adds 10.00 to the order's total."""
    order = load_order(tx.session, resource.rsplit("/", 1)[-1])
    total = money_text(Decimal(order.total) + Decimal("10.00"))
    write_order(tx.session, order, {"total": total}, BILLING, tx.now)


@sample_for("export_report")
def whole_pipeline(tx: Tx) -> Sample:
    """Export every deal; the summary counts what the store holds."""
    count = len(tx.session.exec(select(Deal)).all())
    return Sample(arguments={}, shows=[f"{count} deal(s)"])


TESTING_HOOKS = (
    next_stage,
    eve_moves_the_deal,
    move_a_little,
    eve_moves_a_deal_of_the_move,
    small_charge,
    billing_raises_the_total,
    whole_pipeline,
)
"""Pass these to ``Journal.register`` with the tools."""
