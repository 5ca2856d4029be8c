"""A small journal-aware server built only with the public toolkit API.

Run over stdio: ``python tests/toolkit/example_server.py --db PATH --key PATH``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fastmcp import FastMCP
from pydantic import BaseModel
from sqlmodel import Field

from hatp_journal.toolkit import (
    Effect,
    Journal,
    ResourceState,
    Revision,
    SigningKey,
    ToolFailed,
    Tx,
    Undone,
    Versioned,
    compensates,
    create_store_engine,
    irreversible,
    read_only,
    summarize,
    undoable,
)
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import wire_time


class ExampleDeal(Versioned, table=True):
    """A deal in the example store."""

    id: str = Field(primary_key=True)
    stage: str


class StageUndo(BaseModel):
    """What undoing a stage change needs: the deal and the stage to put back."""

    deal_id: str
    stage: str


def uri(deal_id: str) -> str:
    """The resource URI of a deal."""
    return f"example://deals/{deal_id}"


def _load(tx: Tx, deal_id: str) -> ExampleDeal:
    deal = tx.session.get(ExampleDeal, deal_id)
    if deal is None:
        raise ToolFailed(f"no deal {deal_id}", field="deal_id")
    return deal


def _write(tx: Tx, deal: ExampleDeal, stage: str, by: str) -> tuple[Revision, Revision]:
    deal.stage = stage
    tx.session.add(deal)
    return deal.record_change({"stage": stage}, by=by, at=tx.now)


@undoable(window="P7D")
def set_stage(deal_id: str, stage: str, tx: Tx) -> Effect:
    """Move a deal to another stage."""
    deal = _load(tx, deal_id)
    old = deal.stage
    before, after = _write(tx, deal, stage, by="agent")
    return Effect(
        result={"deal": deal_id, "stage": stage},
        summary=summarize(f"Deal {deal_id}", {"stage": old}, {"stage": stage}),
        resource=uri(deal_id),
        before=before.version,
        version=after.version,
        before_etag=before.etag,
        etag=after.etag,
        fields={"stage": stage},
        undo=StageUndo(deal_id=deal_id, stage=old),
    )


def deal_state(resource: str, tx: Tx) -> ResourceState:
    """The deal behind a resource URI, as stored now."""
    deal = tx.session.get(ExampleDeal, resource.rsplit("/", 1)[-1])
    if deal is None:
        return ResourceState(version=None)
    return deal.state({"stage": deal.stage})


@compensates(set_stage, state=deal_state)
def restore_stage(payload: StageUndo, tx: Tx) -> Undone:
    """Put the previous stage back."""
    deal = _load(tx, payload.deal_id)
    _, after = _write(tx, deal, payload.stage, by="undo")
    return Undone(version=after.version)


@read_only()
def get_deal(deal_id: str, tx: Tx) -> dict[str, str]:
    """Read a deal."""
    deal = _load(tx, deal_id)
    return {"deal": deal.id, "stage": deal.stage, "version": deal.version}


@irreversible(reason="delivered to external recipients", remedy="send a correction email")
def send_note(to: str, text: str) -> dict[str, str]:
    """Send a note to someone outside."""
    return {"sent_to": to}


TOOLS = (set_stage, restore_stage, get_deal, send_note)


def seed(journal: Journal, deal_id: str = "D-881", stage: str = "Proposal") -> None:
    """Put one deal in the store."""
    from sqlmodel import Session

    with Session(journal.engine) as session:
        if session.get(ExampleDeal, deal_id) is None:
            start = Revision.of("v12", {"stage": stage})
            session.add(
                ExampleDeal(
                    id=deal_id,
                    stage=stage,
                    version=start.version,
                    etag=start.etag,
                    changed_by="dana",
                    changed_at=wire_time(journal.now()),
                )
            )
            session.commit()


def edit_outside(journal: Journal, deal_id: str, stage: str, by: str) -> None:
    """A colleague's edit, outside any agent run."""
    from sqlmodel import Session

    with Session(journal.engine) as session:
        tx = Tx(session=session, now=journal.now(), server=journal.server)
        _write(tx, _load(tx, deal_id), stage, by=by)
        session.commit()


def build(db: Path, key: SigningKey, clock: FakeClock | None = None) -> tuple[FastMCP, Journal]:
    """The example server and its journal."""
    mcp = FastMCP("example-deals")
    journal = Journal(
        "example://deals",
        key=key,
        store=create_store_engine(db),
        **({"clock": clock} if clock else {}),
    )
    journal.register(mcp, *TOOLS)
    seed(journal)
    return mcp, journal


def main() -> None:
    """Serve the example over stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    args = parser.parse_args()
    mcp, _ = build(args.db, SigningKey.load_or_create(args.key))
    mcp.run(show_banner=False)


if __name__ == "__main__":
    main()
