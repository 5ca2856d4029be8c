"""Deletes through an API keep a tombstone: the undo restores the row with a version never used before."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Field, Session

from hatp_journal.toolkit import Revision, Tx, UndoFailed, Versioned, create_store_engine
from hatp_journal.toolkit.versions import delete_versioned, restore_versioned, versioned_state

NOW = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


class Note(Versioned, table=True):
    __tablename__ = "tombstone_test_note"

    id: str = Field(primary_key=True)
    text: str

    def fields(self) -> dict[str, str]:
        return {"text": self.text}


def test_a_deleted_row_is_restored_as_it_was_with_a_version_after_the_deletes(tmp_path: Path) -> None:
    engine = create_store_engine(tmp_path / "notes.db")
    first = Revision.of("v3", {"text": "call Globex"})
    with Session(engine) as session:
        session.add(Note(id="n1", text="call Globex", version=first.version, etag=first.etag,
                         changed_by="dana@acme.com", changed_at="2026-11-01T08:00:00Z"))  # fmt: skip
        session.commit()

    with Session(engine) as session:
        tx = Tx(session=session, now=NOW, server="notes://acme")
        before, after = delete_versioned(tx, session.get(Note, "n1"), resource="notes://acme/n1", by="agent")
        session.commit()
        assert (before.version, after.version) == ("v3", "v4")
        gone = versioned_state(tx, session.get(Note, "n1"), "notes://acme/n1", {})
        assert (gone.version, gone.etag, gone.changed_by) == ("v4", after.etag, "agent")

    with Session(engine) as session:
        tx = Tx(session=session, now=NOW, server="notes://acme")
        restored = restore_versioned(tx, Note, resource="notes://acme/n1", fields=Note.fields, by="undo")
        session.commit()
        assert (restored.text, restored.version, restored.etag) == ("call Globex", "v5", first.etag)
        assert versioned_state(tx, None, "notes://acme/n1", {}).version is None  # the tombstone went

    with Session(engine) as session:
        tx = Tx(session=session, now=NOW, server="notes://acme")
        with pytest.raises(UndoFailed, match="no tombstone"):
            restore_versioned(tx, Note, resource="notes://acme/n2", fields=Note.fields, by="undo")
    engine.dispose()
