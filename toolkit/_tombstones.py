"""Deletes that can be undone: the row goes, a tombstone keeps its last content and version.

An undo has to check that nobody changed a resource since the call (``ifVersion``), and a row that
was deleted has no version left to check. :func:`delete_versioned` deletes a :class:`Versioned`
row and keeps, in ``hatp_tombstone``, what it held and the version the delete left (the row's next
revision, so no version label is used twice). :func:`versioned_state` answers the state reader for
a row that may be gone: the row if it exists, else its tombstone's version, else "does not exist".
:func:`restore_versioned` puts the row back from its tombstone, with a new version. A colleague who
makes the row again meanwhile changes its state away from the tombstone's version: the undo is then
an ``UNDO_CONFLICT`` and nothing of theirs is overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from sqlmodel import Field, SQLModel

from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._effects import ResourceState, Tx
from hatp_journal.toolkit._revisions import Revision, Versioned
from hatp_journal.toolkit.errors import UndoFailed

V = TypeVar("V", bound=Versioned)

DELETED = {"deleted": True}
"""The content a deleted resource is tagged with (its etag): the same for every delete."""


class Tombstone(SQLModel, table=True):
    """A deleted row's last content and the version its delete left, by the resource's URI."""

    __tablename__ = "hatp_tombstone"

    resource: str = Field(primary_key=True)
    table_name: str
    version: str
    etag: str
    content_json: str
    deleted_by: str
    deleted_at: str


def delete_versioned(tx: Tx, row: Versioned, *, resource: str, by: str) -> tuple[Revision, Revision]:
    """Delete ``row`` in ``tx`` and keep its tombstone; returns (the revision before, the one the
    delete left) for the :class:`~hatp_journal.toolkit.Effect`'s ``before``/``version`` and etags."""
    before = row.revision
    after = before.bump(DELETED)
    content = row.model_dump(mode="json")
    tombstone = tx.session.get(Tombstone, resource) or Tombstone(
        resource=resource, table_name="", version="", etag="", content_json="", deleted_by="", deleted_at=""
    )
    tombstone.table_name = str(getattr(row, "__tablename__", type(row).__name__))
    tombstone.version, tombstone.etag = after.version, after.etag
    tombstone.content_json = json.dumps(content, ensure_ascii=False, sort_keys=True)
    tombstone.deleted_by, tombstone.deleted_at = by, wire_time(tx.now)
    tx.session.delete(row)
    tx.session.add(tombstone)
    return before, after


def versioned_state(tx: Tx, row: Versioned | None, resource: str, fields: Mapping[str, Any]) -> ResourceState:
    """The state reader's answer for a row that may have been deleted: the row as it is, else the
    version its delete left (who deleted it as ``changed_by``), else ``version=None``."""
    if row is not None:
        return row.state(fields)
    tombstone = tx.session.get(Tombstone, resource)
    if tombstone is None:
        return ResourceState(version=None)
    return ResourceState(tombstone.version, {}, tombstone.etag, tombstone.deleted_by)


def restore_versioned(tx: Tx, model: type[V], *, resource: str, fields: Any, by: str) -> V:
    """Put back the row deleted as ``resource`` from its tombstone, with the next version; the
    tombstone goes. ``fields(row)`` gives the fields that make its content tag (as in the tool).
    :class:`~hatp_journal.toolkit.UndoFailed` if there is no tombstone to restore from."""
    tombstone = tx.session.get(Tombstone, resource)
    if tombstone is None:
        raise UndoFailed(f"{resource} has no tombstone to restore it from")
    content = json.loads(tombstone.content_json)
    content["version"] = tombstone.version  # go on from the delete's version: labels never repeat
    row = model.model_validate(content)
    existing = tx.session.get(model, _primary_key(model, content))
    if existing is not None:  # made again meanwhile: reached only under a signed override
        for name, value in content.items():
            setattr(existing, name, value)
        row = existing
    row.record_change(fields(row), by=by, at=tx.now)
    tx.session.delete(tombstone)
    tx.session.add(row)
    return row


def _primary_key(model: type[SQLModel], content: Mapping[str, Any]) -> Any:
    keys = [column.name for column in model.__table__.primary_key.columns]  # type: ignore[attr-defined]
    values = tuple(content[name] for name in keys)
    return values[0] if len(values) == 1 else values
