"""Keys pinned on first contact, kept so that a later restart can't be handed another key."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Field, Session, SQLModel, select

from hatp_journal.toolkit.clock import utc_now, wire_time
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode


class RecPin(SQLModel, table=True):
    """A tool server's receipt key, pinned the first time the Recorder met it."""

    __tablename__ = "rec_pin"

    server: str = Field(primary_key=True)
    kid: str = Field(primary_key=True)
    public_key: str
    pinned_at: str


class PinStore:
    """Pins by server name, in the Recorder's store."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        SQLModel.metadata.create_all(engine, tables=[RecPin.__table__])  # type: ignore[attr-defined]

    def pinned(self, server: str) -> dict[str, VerifyKey]:
        """The keys pinned for ``server`` (empty before first contact)."""
        with Session(self.engine) as session:
            rows = session.exec(select(RecPin).where(RecPin.server == server)).all()
        return {row.kid: VerifyKey.from_raw(b64url_decode(row.public_key)) for row in rows}

    def pin(self, server: str, keys: dict[str, VerifyKey]) -> None:
        """Pin ``keys`` for ``server``; done once, at first contact."""
        with Session(self.engine) as session:
            for kid, key in keys.items():
                session.add(
                    RecPin(
                        server=server, kid=kid, public_key=b64url(key.raw()), pinned_at=wire_time(utc_now())
                    )
                )
            session.commit()
