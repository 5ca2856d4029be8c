"""Keys pinned on first contact, kept so that a later restart can't be handed another key.

A server's key set is pinned once: ``rec_pin_set`` holds one row per pinned server (its primary
key makes a second first pin fail on any database) and ``rec_pin`` one row per pinned key. Both
are written in one transaction, which on a toolkit SQLite engine is ``BEGIN IMMEDIATE``, and on
PostgreSQL waits on the other transaction's uncommitted ``rec_pin_set`` row and then fails its
insert, so two Recorders meeting an unpinned server at once end with one key set, not two.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, select

from hatp_journal._shared.clock import utc_now, wire_time
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode
from hatp_journal.toolkit.store_schema import ensure_schema


class RecPin(SQLModel, table=True):
    """A tool server's receipt key, pinned the first time the Recorder met it."""

    __tablename__ = "rec_pin"

    server: str = Field(primary_key=True)
    kid: str = Field(primary_key=True)
    public_key: str
    pinned_at: str


class RecPinSet(SQLModel, table=True):
    """A server whose key set is pinned: one row each, so only one first pin can succeed."""

    __tablename__ = "rec_pin_set"

    server: str = Field(primary_key=True)
    pinned_at: str


PINS_SCHEMA = 1
"""The version of the pin tables (``hatp_schema`` part ``pins``)."""
PINS_TABLES = [SQLModel.metadata.tables["rec_pin"], SQLModel.metadata.tables["rec_pin_set"]]


class PinStore:
    """Pins by server name, in the Recorder's store."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        ensure_schema(engine, "pins", PINS_SCHEMA, PINS_TABLES)

    def pinned(self, server: str) -> dict[str, VerifyKey]:
        """The keys pinned for ``server`` (empty before first contact)."""
        with Session(self.engine) as session:
            return _pinned_in(session, server)

    def pin_first(self, server: str, offered: dict[str, VerifyKey]) -> dict[str, VerifyKey]:
        """Pin ``offered`` for ``server`` unless a key set is pinned already; the keys pinned now.

        Whoever pins first wins; the caller compares its offer with what this returns.
        """
        if not offered:
            raise ValueError(f"no keys to pin for {server}")
        try:
            with Session(self.engine) as session:
                pinned = _pinned_in(session, server)
                if pinned:
                    return pinned
                at = wire_time(utc_now())
                session.add(RecPinSet(server=server, pinned_at=at))
                session.flush()  # the claim first: a lost race fails here, before any key row
                for kid, key in offered.items():
                    session.add(RecPin(server=server, kid=kid, public_key=b64url(key.raw()), pinned_at=at))
                session.commit()
                return dict(offered)
        except IntegrityError:
            # Another Recorder pinned this server between our read and our write.
            return self.pinned(server)


def _pinned_in(session: Session, server: str) -> dict[str, VerifyKey]:
    rows = session.exec(select(RecPin).where(RecPin.server == server)).all()
    return {row.kid: VerifyKey.from_raw(b64url_decode(row.public_key)) for row in rows}
