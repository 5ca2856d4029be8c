"""Calls that wrote several resources (``Effect.also``): each is kept, checked and verified on undo.

The call's own resource stays in :class:`~hatp_journal.toolkit.store.UndoRecord`, as for a call
that wrote one; every other resource gets a row of ``hatp_undo_write``. A call that wrote one
resource has no row here, and its check and compensate answers are what they always were.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python
from sqlmodel import Field, Session, SQLModel, col, select

from hatp_journal.toolkit._effects import Effect, ResourceState, Write
from hatp_journal.toolkit.errors import ToolFailed
from hatp_journal.toolkit.wire import AlsoWrite, FieldChange, ResourceFound


class UndoWrite(SQLModel, table=True):
    """One more resource a call wrote (``effect.also``), beside its undo record's own resource."""

    __tablename__ = "hatp_undo_write"

    token_hash: str = Field(primary_key=True)
    position: int = Field(primary_key=True)
    resource: str
    version: str
    before: str | None = None
    etag: str | None = None
    before_etag: str | None = None
    fields_json: str | None = None


@dataclass(frozen=True)
class Kept:
    """One resource of a call as the undo store keeps it: the version the call left and before."""

    resource: str
    version: str
    before: str | None = None
    etag: str | None = None
    before_etag: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def checked_also(tool: str, effect: Effect) -> list[Write]:
    """``effect.also`` after checking what a wire format can't say: each a :class:`Write` naming
    its resource once (the call's own one included), with a version that is text.

    A tool that returns anything else fails (``TOOL_FAILED``) and its change is rolled back: an
    undo that could not check one of the resources must not be offered, nor the change kept
    without its undo.
    """
    if isinstance(effect.also, str | bytes | Mapping):
        raise ToolFailed(f"{tool}: Effect.also must be a list of Write, not {type(effect.also).__name__}")
    writes = list(effect.also)
    named = [effect.resource]
    for place, write in enumerate(writes):
        where = f"{tool}: Effect.also[{place}]"
        if not isinstance(write, Write):
            raise ToolFailed(f"{where} is {type(write).__name__}, not Write")
        if not isinstance(write.resource, str) or not write.resource.strip():
            raise ToolFailed(f"{where} names no resource")
        for part in ("version", "before"):
            value = getattr(write, part)
            if value is not None and (not isinstance(value, str) or not value):
                raise ToolFailed(
                    f"{where}: the {part} of {write.resource} must be a non-empty string, not {value!r}"
                )
        if write.resource in named:
            raise ToolFailed(f"{tool}: the effect names {write.resource} twice; list each resource once")
        named.append(write.resource)
    return writes


def also_info(writes: Sequence[Write]) -> list[AlsoWrite] | None:
    """``effect.also`` as sent: absent for a call that wrote one resource."""
    if not writes:
        return None
    return [
        AlsoWrite(
            resource=write.resource,
            version=write.version,
            before=write.before,
            fields=None if write.fields is None else to_jsonable_python(dict(write.fields)),
        )
        for write in writes
    ]


def rows_for(token_hash: str, writes: Sequence[Write]) -> list[UndoWrite]:
    """The ``hatp_undo_write`` rows of a call's other resources (each has a version by now)."""
    return [
        UndoWrite(
            token_hash=token_hash,
            position=place,
            resource=write.resource,
            version=str(write.version),
            before=write.before,
            etag=write.etag,
            before_etag=write.before_etag,
            fields_json=None if write.fields is None else json.dumps(to_jsonable_python(dict(write.fields))),
        )
        for place, write in enumerate(writes)
    ]


def others_of(session: Session, token_hash: str) -> list[Kept]:
    """The other resources of the call behind ``token_hash``, in the order it listed them."""
    rows = session.exec(
        select(UndoWrite).where(col(UndoWrite.token_hash) == token_hash).order_by(col(UndoWrite.position))
    ).all()
    return [
        Kept(
            resource=row.resource,
            version=row.version,
            before=row.before,
            etag=row.etag,
            before_etag=row.before_etag,
            fields=json.loads(row.fields_json) if row.fields_json else {},
        )
        for row in rows
    ]


def changes_since(kept: Kept, state: ResourceState) -> list[FieldChange]:
    """The fields that differ from what the call left, by name."""
    now = to_jsonable_python(dict(state.fields))
    left = kept.fields
    return [
        FieldChange(field=name, expected=left.get(name), now=now.get(name))
        for name in sorted(set(left) | set(now))
        if left.get(name) != now.get(name)
    ]


def found(kept: Kept, expected: str, state: ResourceState, *, matched: bool) -> ResourceFound:
    """What a check found of one resource (who changed it only when it conflicts): ``matched`` says
    whether it is still as expected (the engine's one comparison, shared with one-resource calls)."""
    if matched:
        return ResourceFound(
            resource=kept.resource, status="ok", version_expected=expected, version_found=state.version
        )
    return ResourceFound(
        resource=kept.resource,
        status="conflict",
        version_expected=expected,
        version_found=state.version,
        changed_by=state.who_changed() if state.exists else None,
        changes=changes_since(kept, state),
    )


def not_restored(kept: Kept, after: ResourceState) -> str | None:
    """Why ``kept`` does not read back as before the call after the undo, or None if it does."""
    if kept.before is None:
        return (
            None if not after.exists else f"the created resource {kept.resource} still exists after the undo"
        )
    if kept.before_etag is not None and after.etag != kept.before_etag:
        return f"after the undo {kept.resource} does not match its state before the call"
    return None


Reader = Callable[[str], ResourceState]
"""Reads one resource by its URI (the compensation's state reader inside the transaction)."""
