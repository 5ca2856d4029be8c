"""Moving part of one deal's amount to another: one call that writes two deals.

The call's effect names the deal the amount leaves (``effect.resource``) and, in ``effect.also``,
the deal it goes to, each with its own version: the undo puts both amounts back only if neither
deal changed since, and a conflict on either names that deal.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel

from hatp_journal.toolkit import Effect, ToolFailed, Tx, Undone, Write, compensates, undoable
from hatp_journal.toolkit.versions import Summary, changes_text
from hatp_journal.toolkit.wire import EffectChange

from .store import (
    deal_fields,
    deal_state,
    deal_uri,
    deal_view,
    load_deal,
    money_text,
    parse_amount,
    write_deal,
)

AGENT = "agent"
UNDO = "undo"


class AmountsUndo(BaseModel):
    """The amounts to put back, by deal id (the deal the amount left first)."""

    amounts: dict[str, str]


@undoable(window="P7D")
def move_amount(from_deal: str, to_deal: str, amount: str, tx: Tx) -> Effect:
    """Move part of one deal's amount to another deal of the same currency (a product line the
    customer now buys under the other deal). Both deals change; undo puts both amounts back."""
    source, target = load_deal(tx.session, from_deal), load_deal(tx.session, to_deal)
    if source.id == target.id:
        raise ToolFailed(f"both deals are {source.id}; name two different deals", field="to_deal")
    if source.currency != target.currency:
        raise ToolFailed(
            f"deal {source.id} is in {source.currency}, {target.id} in {target.currency}", field="to_deal"
        )
    value = parse_amount(amount)
    if value > Decimal(source.amount):
        raise ToolFailed(
            f"deal {source.id} is worth {source.amount} {source.currency}", field="amount", most=source.amount
        )
    old = {source.id: source.amount, target.id: target.amount}
    was_source, now_source = write_deal(
        tx.session, source, {"amount": money_text(Decimal(source.amount) - value)}, AGENT, tx.now
    )
    was_target, now_target = write_deal(
        tx.session, target, {"amount": money_text(Decimal(target.amount) + value)}, AGENT, tx.now
    )
    changes = [
        EffectChange(field=deal.id, before=old[deal.id], after=deal.amount) for deal in (source, target)
    ]
    return Effect(
        result={"from": deal_view(source), "to": deal_view(target)},
        summary=Summary(f"Deal amounts {changes_text(changes)}", changes),
        resource=deal_uri(source.id),
        before=was_source.version,
        version=now_source.version,
        before_etag=was_source.etag,
        etag=now_source.etag,
        fields=deal_fields(source),
        also=[
            Write(
                resource=deal_uri(target.id),
                before=was_target.version,
                version=now_target.version,
                before_etag=was_target.etag,
                etag=now_target.etag,
                fields=deal_fields(target),
            )
        ],
        undo=AmountsUndo(amounts=old),
    )


@compensates(move_amount, state=deal_state)  # asked for each of the two deals in turn
def put_amounts_back(payload: AmountsUndo, tx: Tx) -> Undone:
    """Give each deal its amount from before the move (new versions whose content equals it)."""
    versions = []
    for deal_id, amount in payload.amounts.items():
        deal = load_deal(tx.session, deal_id)
        if deal.amount != amount:
            write_deal(tx.session, deal, {"amount": amount}, UNDO, tx.now)
        versions.append(deal.version)
    return Undone(version=versions[0])


MOVE_TOOLS = (move_amount, put_amounts_back)
