"""A key-value store with knobs that make its compensation misbehave, for failure tests."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel
from sqlmodel import Field, SQLModel

from hatp_journal.toolkit import (
    Effect,
    ResourceState,
    Revision,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    compensates,
    summarize,
    undoable,
)


class KvItem(SQLModel, table=True):
    """One value under a key."""

    key: str = Field(primary_key=True)
    value: str
    version: str
    etag: str
    changed_by: str = "seed"


class KvLastVersion(SQLModel, table=True):
    """The last version a key was given, kept when the key is deleted: a key made again goes on
    from there, so no version label of a key is ever used twice (a check compares labels)."""

    key: str = Field(primary_key=True)
    version: str


def _revise(tx: Tx, key: str, value: str) -> Revision:
    """The key's next revision, holding ``value``, after every version it ever had."""
    last = tx.session.get(KvLastVersion, key)
    after = Revision(last.version, "").bump({"value": value}) if last else Revision.of("v1", {"value": value})
    tx.session.merge(KvLastVersion(key=key, version=after.version))
    return after


class KvUndo(BaseModel):
    """The value to put back (None: the key did not exist)."""

    key: str
    value: str | None


class Knobs:
    """How the next compensation misbehaves."""

    raise_midway = False
    write_wrong_value = False
    reads_before_failing: int | None = None  # then the state reader can't read the store
    reader_breaks: Literal["crash", "wrong type"] | None = None  # an author's bug in the state reader
    evidence: ClassVar[list[str]] = []  # what a failing delete says it saw
    asked_who: ClassVar[list[str]] = []  # keys whose last editor was looked up (lazily)


def uri(key: str) -> str:
    """The resource URI of a key."""
    return f"kv://store/{key}"


@undoable(window="PT1H")
def put(key: str, value: str, tx: Tx) -> Effect:
    """Set a key, creating it if needed."""
    if not key:
        raise ToolFailed("key must not be empty", field="key")
    item = tx.session.get(KvItem, key)
    old = item.value if item else None
    before = Revision(item.version, item.etag) if item else None
    after = _revise(tx, key, value)
    if item is None:
        item = KvItem(key=key, value=value, version=after.version, etag=after.etag, changed_by="agent")
    else:
        item.value, item.version, item.etag, item.changed_by = value, after.version, after.etag, "agent"
    tx.session.add(item)
    return Effect(
        result={"key": key, "value": value},
        summary=summarize(f"Key {key}", {"value": old}, {"value": value}),
        resource=uri(key),
        before=before.version if before else None,
        before_etag=before.etag if before else None,
        version=after.version,
        etag=after.etag,
        fields={"value": value},
        undo=KvUndo(key=key, value=old),
    )


def kv_state(resource: str, tx: Tx) -> ResourceState:
    """The key as stored now."""
    if Knobs.reader_breaks == "crash":
        raise RuntimeError("database is locked")
    if Knobs.reader_breaks == "wrong type":
        wrong: Any = {"version": "v1"}
        return wrong
    if Knobs.reads_before_failing is not None:
        if Knobs.reads_before_failing == 0:
            raise ToolFailed("the store is offline")
        Knobs.reads_before_failing -= 1
    item = tx.session.get(KvItem, resource.rsplit("/", 1)[-1])
    if item is None:
        return ResourceState(version=None)
    editor = item.changed_by

    def who() -> str:
        Knobs.asked_who.append(item.key)
        return editor

    return ResourceState(item.version, {"value": item.value}, item.etag, who)


@compensates(put, state=kv_state)
def unput(payload: KvUndo, tx: Tx) -> Undone:
    """Put the old value back, or remove a key the call created."""
    item = tx.session.get(KvItem, payload.key)
    assert item is not None
    if payload.value is None:
        tx.session.delete(item)
        if Knobs.raise_midway:
            raise UndoFailed("storage refused the delete", evidence=Knobs.evidence)
        return Undone(version=None)
    value = payload.value + "!" if Knobs.write_wrong_value else payload.value
    after = _revise(tx, payload.key, value)
    item.value, item.version, item.etag, item.changed_by = value, after.version, after.etag, "undo"
    tx.session.add(item)
    if Knobs.raise_midway:
        raise RuntimeError("disk full")
    return Undone(version=after.version, side_effects=[f"value of {payload.key} restored"])


def outside_edit(tx: Tx, key: str, value: str, by: str) -> None:
    """Somebody else changes a key."""
    item = tx.session.get(KvItem, key)
    assert item is not None
    after = _revise(tx, key, value)
    item.value, item.version, item.etag, item.changed_by = value, after.version, after.etag, by
    tx.session.add(item)


TOOLS = (put, unput)
