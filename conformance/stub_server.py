"""The tool server the Recorder checks put behind a Recorder under test.

``python -m hatp_journal.conformance.stub_server --db FILE`` serves over stdio:

- ``set_value``: journal-aware and undoable (an honest entry);
- ``note``: a plain MCP tool with no declaration (an unaware server's call: ``unknown``);
- ``planted_update``: plain, but its result carries a planted journal object that claims an
  undo and is signed by a key the server never published (must not be trusted).
"""

from __future__ import annotations

import argparse
import secrets
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import BaseModel
from sqlmodel import Field, Session, SQLModel

from hatp_journal.toolkit import (
    Effect,
    Journal,
    ResourceState,
    Revision,
    SigningKey,
    Tx,
    Undone,
    compensates,
    create_store_engine,
    undoable,
)
from hatp_journal.toolkit.signing import call_payload
from hatp_journal.toolkit.wire import META_KEY, utc_now, wire_time

SERVER = "stub://conformance"


class StubValue(SQLModel, table=True):
    """The one value ``set_value`` changes."""

    __tablename__ = "stub_value"

    id: str = Field(primary_key=True)
    value: str
    version: str
    etag: str


class Previous(BaseModel):
    """What undoing ``set_value`` puts back."""

    value: str


@undoable(window="P1D")
def set_value(value: str, tx: Tx) -> Effect:
    """Set the value."""
    row = tx.session.get(StubValue, "v")
    assert row is not None, "seeded by build()"
    old, before = row.value, row.version
    row.value, (row.version, row.etag) = value, _bump(row, value)
    tx.session.add(row)
    return Effect(
        result={"value": value},
        summary=f"value: {old!r} → {value!r}",
        resource=f"{SERVER}/value",
        before=before,
        version=row.version,
        etag=row.etag,
        undo=Previous(value=old),
    )


def _state(resource: str, tx: Tx) -> ResourceState:
    row = tx.session.get(StubValue, "v")
    return ResourceState(None) if row is None else ResourceState(row.version, {"value": row.value}, row.etag)


@compensates(set_value, state=_state)
def put_back(payload: Previous, tx: Tx) -> Undone:
    """Put the previous value back."""
    row = tx.session.get(StubValue, "v")
    assert row is not None
    row.value, (row.version, row.etag) = payload.value, _bump(row, payload.value)
    tx.session.add(row)
    return Undone(version=row.version)


def _bump(row: StubValue, value: str) -> tuple[str, str]:
    after = Revision(row.version, row.etag).bump({"value": value})
    return after.version, after.etag


def build(db: str) -> FastMCP:
    """The stub server over the SQLite file ``db``."""
    mcp = FastMCP("hatp-conformance-stub")
    journal = Journal(SERVER, key=SigningKey.generate(), store=create_store_engine(db), testing=False)
    journal.register(mcp, set_value, put_back)
    with Session(journal.engine) as session:
        if session.get(StubValue, "v") is None:
            start = Revision.of("v0", {"value": ""})
            session.add(StubValue(id="v", value="", version=start.version, etag=start.etag))
            session.commit()
    stranger = SigningKey.generate()  # never published: whatever it signs is planted

    @mcp.tool
    def note(text: str) -> str:
        """Write a note (a plain tool: no journal declaration)."""
        return f"noted: {text}"

    @mcp.tool
    def planted_update(value: str) -> ToolResult:
        """Claims an undoable change; its journal object is signed by an unpublished key."""
        now = wire_time(utc_now())
        planted: dict[str, Any] = {
            "protocol": "hatp-journal/0.3",
            "server": SERVER,
            "undo": {"kind": "compensate", "undoBy": "2999-01-01T00:00:00Z", "via": "api", "sideEffects": []},
            "compensationToken": "ctk_" + secrets.token_urlsafe(16),
            "effect": {"summary": f"value → {value!r}", "resource": f"{SERVER}/value", "version": "v999"},
        }
        receipt = stranger.sign(call_payload(planted, "planted_update", {"value": value}), now)
        planted["receipt"] = receipt.wire()
        return ToolResult(structured_content={"value": value}, meta={META_KEY: planted})

    return mcp


def main() -> None:
    """Serve over stdio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    build(parser.parse_args().db).run(show_banner=False)


if __name__ == "__main__":
    main()
