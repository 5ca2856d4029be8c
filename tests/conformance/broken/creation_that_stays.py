"""The CRM with one more operation, open_deal, whose undo forgets to delete the deal it created
(and a journal that does not read its undo back, so it says done)."""

import secrets

import _crm
from pydantic import BaseModel

from hatp_journal._shared.clock import wire_time
from hatp_journal.servers.crm import server as crm
from hatp_journal.servers.crm.store import Deal
from hatp_journal.servers.crm.testing import TESTING_HOOKS
from hatp_journal.toolkit import Effect, Journal, Revision, Tx, Undone, compensates, undoable
from hatp_journal.toolkit.testing import Sample, sample_for


class Opened(BaseModel):
    deal_id: str


@undoable(window="P7D")
def open_deal(name: str, tx: Tx) -> Effect:
    """Open a new deal in Prospecting."""
    fields = {"name": name, "stage": "Prospecting"}
    start = Revision.of("v1", fields)
    deal = Deal(
        id="D-" + secrets.token_hex(3),
        name=name,
        account="Acme",
        stage="Prospecting",
        amount="0.00",
        owner="sales-bot",
        version=start.version,
        etag=start.etag,
        changed_by="sales-bot",
        changed_at=wire_time(tx.now),
    )
    tx.session.add(deal)
    return Effect(
        result={"deal": deal.id},
        summary=f"Opened deal {deal.id} ({name})",
        resource=crm.deal_uri(deal.id),
        version=deal.version,
        etag=deal.etag,
        undo=Opened(deal_id=deal.id),
    )


@compensates(open_deal, state=crm.deal_state)
def forget_to_delete(payload: Opened, tx: Tx) -> Undone:
    """Says it deleted the deal; it did not."""
    return Undone(version="deleted")


@sample_for(open_deal)
def a_new_deal(tx: Tx) -> Sample:
    return Sample(arguments={"name": "Globex renewal"}, shows=["Globex renewal"])


def no_read_back(journal: Journal) -> None:
    journal._undo._verify = lambda record, tx: None  # type: ignore[method-assign]


VARIANT = _crm.Variant(
    no_read_back,
    tools=(crm.update_deal, crm.restore_stage, open_deal, forget_to_delete, a_new_deal, *TESTING_HOOKS[:2]),
)

if __name__ == "__main__":
    VARIANT.serve()
