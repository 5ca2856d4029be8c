"""A small journal-aware server whose calls rely on each other, for planning and execution tests.

``put`` writes a key; ``attach`` points a key at another one and declares that it used it
(``effect.uses``); ``remove`` moves a key to the bin (no longer shown, as an app's Trash: undoing
the remove brings it back, and a ``put`` over a removed key starts from its binned version);
``publish`` can't be undone; ``get`` reads. A compensation of a key whose
name starts with ``fail`` raises; one whose name starts with ``hang`` never answers: it waits until
the process that started this server is gone, then this server exits without committing (a Recorder
killed mid-compensation). The first compensation of a key whose name starts with ``gone`` kills this
server (SIGKILL) before anything commits, and leaves a mark beside the store so that the server, started
again, compensates it normally (a server that went away and came back). A compensation of a key whose
name starts with ``lost`` commits, then kills this server before it answers (the answer is lost; the
server's record keeps it). Every compensation that commits is counted in ``undo_log``.
``reserve`` changes two fields of a shelf at once (available and reserved); ``reserve_by_hand``
does the same with a summary written by hand and no ``effect.changes``, like a server written
before them.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from pydantic import BaseModel
from sqlalchemy import Engine
from sqlmodel import Field, Session, SQLModel, select

from hatp_journal.toolkit import (
    Effect,
    Journal,
    ResourceState,
    Revision,
    SigningKey,
    ToolFailed,
    Tx,
    UndoFailed,
    Undone,
    compensates,
    create_store_engine,
    irreversible,
    previews,
    read_only,
    summarize,
    undoable,
)
from hatp_journal.toolkit.wire import Use

SERVER = "chain://store"


class ChainItem(SQLModel, table=True):
    key: str = Field(primary_key=True)
    value: str
    version: str
    etag: str
    changed_by: str = "seed"
    removed: bool = False


class UndoLog(SQLModel, table=True):
    """One row per compensation that committed: a second one for a token would be a double undo."""

    id: int | None = Field(default=None, primary_key=True)
    key: str
    token_of: str
    replaced: str = Field(description="The value the compensation found and replaced")
    override: bool = False


class Published(SQLModel, table=True):
    """One row per publish that happened: the effect an approval must come before."""

    id: int | None = Field(default=None, primary_key=True)
    key: str
    value: str


class Shelf(SQLModel, table=True):
    """Stock of one item: what can still be reserved and what is reserved."""

    item: str = Field(primary_key=True)
    available: int
    reserved: int = 0
    version: str
    etag: str
    changed_by: str = "seed"

    def counts(self) -> dict[str, int]:
        return {"available": self.available, "reserved": self.reserved}


class ShelfUndo(BaseModel):
    item: str
    available: int
    reserved: int


class ChainUndo(BaseModel):
    key: str
    value: str | None
    call: str
    binned: bool = False  # ``value`` goes back to the bin: the call wrote over a removed key


def uri(key: str) -> str:
    return f"chain://store/{key}"


def _write(tx: Tx, key: str, value: str, uses: list[Use]) -> Effect:
    item = tx.session.get(ChainItem, key)
    old = item.value if item and not item.removed else None
    # A removed key's binned version counts: a write over it follows on from the remove.
    before = Revision(item.version, item.etag) if item else None
    after = before.bump({"value": value}) if before else Revision.of("v1", {"value": value})
    binned = item.value if item and item.removed else None
    if item is None:
        item = ChainItem(key=key, value=value, version=after.version, etag=after.etag, changed_by="agent")
    else:
        item.value, item.version, item.etag, item.changed_by = value, after.version, after.etag, "agent"
        item.removed = False
    tx.session.add(item)
    if before is not None:
        uses = [Use(resource=uri(key), version=before.version), *uses]
    call = f"{key}@{after.version}#{secrets.token_hex(6)}"
    return Effect(
        result={"key": key, "value": value},
        summary=summarize(f"Key {key}", {"value": old}, {"value": value}) if old else f"Create key {key}",
        resource=uri(key),
        before=before.version if before else None,
        before_etag=before.etag if before else None,
        version=after.version,
        etag=after.etag,
        fields={"value": value},
        uses=uses,
        undo=ChainUndo(key=key, value=binned, call=call, binned=True)
        if binned is not None
        else ChainUndo(key=key, value=old, call=call),
    )


@undoable(window="PT1H")
def put(key: str, value: str, tx: Tx) -> Effect:
    """Set a key."""
    return _write(tx, key, value, [])


@undoable(window="PT1H")
def attach(key: str, target: str, tx: Tx) -> Effect:
    """Point ``key`` at ``target``: the call relies on ``target``."""
    return _write(tx, key, f"-> {target}", [Use(resource=uri(target))])


def chain_state(resource: str, tx: Tx) -> ResourceState:
    """A key as ``get`` shows it: a removed key is gone."""
    item = tx.session.get(ChainItem, resource.rsplit("/", 1)[-1])
    if item is None or item.removed:
        return ResourceState(version=None)
    return ResourceState(item.version, {"value": item.value}, item.etag, item.changed_by)


def binned_state(resource: str, tx: Tx) -> ResourceState:
    """A key wherever it is, shown or in the bin: what undoing a ``remove`` looks at."""
    item = tx.session.get(ChainItem, resource.rsplit("/", 1)[-1])
    if item is None:
        return ResourceState(version=None)
    return ResourceState(item.version, item_fields(item), item.etag, item.changed_by)


def item_fields(item: ChainItem) -> dict[str, Any]:
    return {"value": item.value, "removed": True} if item.removed else {"value": item.value}


def _undo(payload: ChainUndo, tx: Tx) -> Undone:
    if payload.key.startswith("hang"):
        _exit_once_orphaned()
    if payload.key.startswith("gone"):
        _go_away_once(payload.key)
    if payload.key.startswith("lost"):
        tx.after_commit(_killed)  # committed, and the answer is never sent
    item = tx.session.get(ChainItem, payload.key)
    assert item is not None
    if payload.key.startswith("fail"):
        raise UndoFailed(f"{payload.key} refuses to be undone")
    replaced = "(removed)" if item.removed else item.value  # bringing a key back replaces no one's value
    tx.session.add(
        UndoLog(key=payload.key, token_of=payload.call, replaced=replaced, override=tx.override is not None)
    )
    if payload.value is None:
        tx.session.delete(item)
        return Undone(version=None)
    item.value, item.removed = payload.value, payload.binned
    after = Revision(item.version, item.etag).bump(item_fields(item))
    item.version, item.etag, item.changed_by = after.version, after.etag, "undo"
    tx.session.add(item)
    return Undone(version=after.version)


@compensates(put, state=chain_state)
def unput(payload: ChainUndo, tx: Tx) -> Undone:
    """Put the old value back (or remove a key the call created)."""
    return _undo(payload, tx)


@compensates(attach, state=chain_state)
def detach(payload: ChainUndo, tx: Tx) -> Undone:
    """Put the old value back (or remove a key the call created)."""
    return _undo(payload, tx)


@undoable(window="PT1H")
def remove(key: str, tx: Tx) -> Effect:
    """Remove a key: it goes to the bin, where undoing the remove finds it."""
    item = tx.session.get(ChainItem, key)
    if item is None or item.removed:
        raise ToolFailed(f"there is no key {key}", key=key)
    before = Revision(item.version, item.etag)
    item.removed = True
    after = before.bump(item_fields(item))
    item.version, item.etag, item.changed_by = after.version, after.etag, "agent"
    tx.session.add(item)
    return Effect(
        result={"key": key, "removed": True},
        summary=f"Remove key {key} (value {item.value})",
        resource=uri(key),
        before=before.version,
        before_etag=before.etag,
        version=after.version,
        etag=after.etag,
        fields=item_fields(item),
        uses=[Use(resource=uri(key), version=before.version)],
        undo=ChainUndo(key=key, value=item.value, call=f"{key}@{after.version}#{secrets.token_hex(6)}"),
    )


@compensates(remove, state=binned_state)
def unremove(payload: ChainUndo, tx: Tx) -> Undone:
    """Bring the key back from the bin."""
    return _undo(payload, tx)


@irreversible(reason="published to the world", remedy="publish a correction")
def publish(key: str, tx: Tx) -> Effect:
    """Publish a key's value."""
    item = tx.session.get(ChainItem, key)
    value = item.value if item else ""
    tx.session.add(Published(key=key, value=value))
    return Effect(result={"published": value}, summary=f"Publish {key}", resource=uri(key))


@previews(publish)
def preview_publish(key: str, tx: Tx) -> Effect:
    """The effect publishing would have: the real call's own, in a dry run (its writes rolled back)."""
    return publish(key, tx)


@read_only()
def get(key: str, tx: Tx) -> Effect:
    """Read a key."""
    item = tx.session.get(ChainItem, key)
    shown = item.value if item and not item.removed else None
    return Effect(result={"key": key, "value": shown}, summary=f"Read {key}", resource=uri(key))


@undoable(window="PT1H")
def put_and_crash(key: str, value: str, tx: Tx) -> Effect:
    """Set a key, then crash (a bug): the store change rolls back, the caller can't know that."""
    _write(tx, key, value, [])
    raise RuntimeError("the tool has a bug")


@compensates(put_and_crash, state=chain_state)
def unput_crashed(payload: ChainUndo, tx: Tx) -> Undone:
    """Never needed: the crash left no undo record."""
    return _undo(payload, tx)


@undoable(window="PT1H")
def refuse(key: str, tx: Tx) -> Effect:
    """Refuse every call, changing nothing."""
    raise ToolFailed(f"{key} is not allowed here", key=key)


@compensates(refuse, state=chain_state)
def unrefuse(payload: ChainUndo, tx: Tx) -> Undone:
    """Never needed: a refusal changes nothing."""
    return _undo(payload, tx)


_PARENT = os.getppid()  # the Recorder that started this server over stdio


def _exit_once_orphaned() -> None:
    """Wait (a bounded number of polls) until our parent is gone, then exit with nothing committed."""
    for _ in range(12_000):
        if os.getppid() != _PARENT:
            break
        time.sleep(0.01)
    os._exit(0)


_STORE: Path | None = None  # this server's store, beside which ``gone`` keys leave their mark


def gone_mark(db: Path, key: str) -> Path:
    """The file saying this server already went away once compensating ``key``."""
    return db.with_name(f"{db.name}.gone-{key}")


def _go_away_once(key: str) -> None:
    assert _STORE is not None, "gone keys need the server started with --db"
    mark = gone_mark(_STORE, key)
    if not mark.exists():
        mark.touch()
        _killed()


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def shelf_uri(item: str) -> str:
    return f"chain://store/shelf/{item}"


def _reserve(tx: Tx, item: str, count: int) -> tuple[Shelf, dict[str, int], Effect]:
    """Move ``count`` from available to reserved; (the shelf, its counts before, the effect)."""
    shelf = tx.session.get(Shelf, item)
    if shelf is None or not 0 < count <= shelf.available:
        raise ToolFailed(f"can't reserve {count} of {item}", field="count")
    was, before = shelf.counts(), Revision(shelf.version, shelf.etag)
    shelf.available, shelf.reserved = shelf.available - count, shelf.reserved + count
    after = before.bump(shelf.counts())
    shelf.version, shelf.etag, shelf.changed_by = after.version, after.etag, "agent"
    tx.session.add(shelf)
    effect = Effect(
        result=shelf.counts(),
        summary=summarize(f"Shelf {item}", was, shelf.counts()),
        resource=shelf_uri(item),
        before=before.version,
        before_etag=before.etag,
        version=after.version,
        etag=after.etag,
        fields=shelf.counts(),
        undo=ShelfUndo(item=item, **was),
    )
    return shelf, was, effect


@undoable(window="PT1H")
def reserve(item: str, count: int, tx: Tx) -> Effect:
    """Reserve ``count`` of an item: fewer available, more reserved."""
    return _reserve(tx, item, count)[2]


@undoable(window="PT1H")
def reserve_by_hand(item: str, count: int, tx: Tx) -> Effect:
    """``reserve``, summarized by hand and without ``effect.changes``."""
    shelf, was, effect = _reserve(tx, item, count)
    summary = (
        f"Shelf {item} available: {was['available']} → {shelf.available}; "
        f"reserved: {was['reserved']} → {shelf.reserved}"
    )
    return replace(effect, summary=summary)


def shelf_state(resource: str, tx: Tx) -> ResourceState:
    shelf = tx.session.get(Shelf, resource.rsplit("/", 1)[-1])
    if shelf is None:
        return ResourceState(version=None)
    return ResourceState(shelf.version, shelf.counts(), shelf.etag, shelf.changed_by)


def _put_back(payload: ShelfUndo, tx: Tx) -> Undone:
    shelf = tx.session.get(Shelf, payload.item)
    assert shelf is not None
    shelf.available, shelf.reserved = payload.available, payload.reserved
    after = Revision(shelf.version, shelf.etag).bump(shelf.counts())
    shelf.version, shelf.etag, shelf.changed_by = after.version, after.etag, "undo"
    tx.session.add(shelf)
    return Undone(version=after.version)


@compensates(reserve, state=shelf_state)
def unreserve(payload: ShelfUndo, tx: Tx) -> Undone:
    """Put the counts back."""
    return _put_back(payload, tx)


@compensates(reserve_by_hand, state=shelf_state)
def unreserve_by_hand(payload: ShelfUndo, tx: Tx) -> Undone:
    """Put the counts back."""
    return _put_back(payload, tx)


TOOLS = (
    *(
        put,
        attach,
        unput,
        detach,
        remove,
        unremove,
        publish,
        preview_publish,
        get,
        put_and_crash,
        unput_crashed,
        refuse,
        unrefuse,
    ),
    *(reserve, unreserve, reserve_by_hand, unreserve_by_hand),
)


def stock(db: Path, item: str, available: int) -> None:
    """Put ``available`` of ``item`` on the shelf, before any run."""
    engine = create_store_engine(db)
    try:
        with Session(engine) as session:
            start = Revision.of("v1", {"available": available, "reserved": 0})
            session.add(Shelf(item=item, available=available, version=start.version, etag=start.etag))
            session.commit()
    finally:
        engine.dispose()


def shelves(db: Path) -> dict[str, dict[str, int]]:
    engine = create_store_engine(db)
    try:
        with Session(engine) as session:
            return {shelf.item: shelf.counts() for shelf in session.exec(select(Shelf))}
    finally:
        engine.dispose()


def outside_edit(db: Path, key: str, value: str, by: str) -> None:
    """A colleague changes a key, outside any run."""
    engine = create_store_engine(db)
    try:
        with Session(engine) as session:
            item = session.get(ChainItem, key)
            assert item is not None
            assert not item.removed
            after = Revision(item.version, item.etag).bump({"value": value})
            item.value, item.version, item.etag, item.changed_by = value, after.version, after.etag, by
            session.add(item)
            session.commit()
    finally:
        engine.dispose()


def values(db: Path) -> dict[str, str]:
    """The keys as ``get`` shows them (removed keys left out)."""
    engine = create_store_engine(db)
    try:
        with Session(engine) as session:
            return {item.key: item.value for item in session.exec(select(ChainItem)) if not item.removed}
    finally:
        engine.dispose()


def binned(db: Path) -> dict[str, str]:
    """The removed keys still in the bin, with their values."""
    engine = create_store_engine(db)
    try:
        with Session(engine) as session:
            return {item.key: item.value for item in session.exec(select(ChainItem)) if item.removed}
    finally:
        engine.dispose()


def published(engine: Engine) -> int:
    with Session(engine) as session:
        return len(session.exec(select(Published)).all())


def undo_log(engine_or_db: Path | Engine) -> list[str]:
    return [row.token_of for row in undo_rows(engine_or_db)]


def undo_rows(engine_or_db: Path | Engine) -> list[UndoLog]:
    engine = engine_or_db if isinstance(engine_or_db, Engine) else create_store_engine(engine_or_db)
    try:
        with Session(engine) as session:
            rows = list(session.exec(select(UndoLog)))
            for row in rows:
                session.expunge(row)
            return rows
    finally:
        if not isinstance(engine_or_db, Engine):
            engine.dispose()


def build(
    db: Path | Engine, key: SigningKey, clock: Callable[[], datetime] | None = None
) -> tuple[FastMCP, Journal]:
    mcp = FastMCP("chain")
    journal = Journal(SERVER, key=key, store=db, **({"clock": clock} if clock else {}))
    journal.register(mcp, *TOOLS)
    return mcp, journal


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT (default: stdio)")
    args = parser.parse_args()
    global _STORE
    _STORE = args.db
    mcp, _ = build(args.db, SigningKey.load_or_create(args.key))
    if args.port is None:
        mcp.run(show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=args.port, show_banner=False)


if __name__ == "__main__":
    main()
