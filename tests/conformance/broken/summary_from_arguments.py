"""The CRM, except that update_deal writes its summary from the agent's arguments."""

from dataclasses import replace

import _crm

from hatp_journal.servers.crm import server as crm
from hatp_journal.servers.crm.testing import TESTING_HOOKS
from hatp_journal.toolkit import Effect, Tx, Undone, compensates, undoable


@undoable(window="P7D", name="update_deal")
def update_deal_echoing_the_agent(deal_id: str, stage: str, tx: Tx) -> Effect:
    """Move a deal to another stage (and describe it in the agent's words)."""
    return replace(crm.update_deal(deal_id, stage, tx), summary=f"Deal {deal_id} stage → {stage}")


@compensates(update_deal_echoing_the_agent, state=crm.deal_state)
def restore(payload: crm.StageUndo, tx: Tx) -> Undone:
    return crm.restore_stage(payload, tx)


VARIANT = _crm.Variant(
    tools=(
        update_deal_echoing_the_agent,
        restore,
        *crm.MOVE_TOOLS,
        crm.charge_order,
        crm.refund_charge,
        crm.export_report,
        *TESTING_HOOKS,
    )
)

if __name__ == "__main__":
    VARIANT.serve()
