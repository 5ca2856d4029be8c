"""Where the approver keeps its sessions, their forms and the sign-in links already used.

Two keepers, one interface. With the Recorder's store on a plain file path, as the demo runs,
sessions and forms live in this process's memory and used link nonces in a file beside the
secret (:class:`MemorySessions`): a restart signs everyone out. With the store on a database URL
(``postgresql://…``, ``sqlite:///…``), they live in that database (:class:`StoredSessions`), so
several ``hatp-recorder web`` processes behind one address honour one sign-in, accept a form one
of them rendered, and refuse a link another one already took. Session ids are stored as their
SHA-256 digests: the database alone can't be used to sign in.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from hatp_journal._shared.clock import parse_wire_time, wire_time
from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.toolkit.store_schema import ensure_schema

# A session remembers this many form nonces; older unused forms then read as stale.
FORMS_KEPT = 500


class Forms(Protocol):
    """The form nonces of one session: each rendered form may be sent once."""

    def new(self) -> str:
        """A nonce for one rendered form."""
        ...

    def use(self, nonce: str) -> None:
        """Mark the form sent; FORM_USED for a second submit, FORM_STALE for an unknown nonce."""
        ...


@dataclass
class Session:
    """One signed-in person in one browser."""

    person: str
    csrf: str
    expires: datetime
    forms: Forms = field(default_factory=lambda: MemoryForms())

    def new_form(self) -> str:
        """A nonce for one rendered form: a second submit of the same form is recognised."""
        return self.forms.new()


class SessionKeeper(Protocol):
    """What :class:`~.signin.SignIn` keeps between requests."""

    def use_link(self, nonce: str, now: datetime) -> bool:
        """Take a link's nonce: True the first time, False if it was already used (anywhere)."""
        ...

    def open(self, session_id: str, person: str, expires: datetime) -> Session:
        """Keep a new session under ``session_id``."""
        ...

    def find(self, session_id: str) -> Session | None:
        """The session kept under ``session_id``, expired or not."""
        ...

    def close(self, session_id: str) -> None:
        """Forget the session (it expired)."""
        ...


class MemoryForms:
    """Form nonces in memory: nonce -> already used."""

    def __init__(self) -> None:
        self.sent: dict[str, bool] = {}

    def new(self) -> str:
        nonce = secrets.token_urlsafe(16)
        self.sent[nonce] = False
        while len(self.sent) > FORMS_KEPT:
            del self.sent[next(iter(self.sent))]
        return nonce

    def use(self, nonce: str) -> None:
        _refuse_form(self.sent.get(nonce))
        self.sent[nonce] = True


class MemorySessions:
    """Sessions in memory, used link nonces appended to ``used_file`` (a link works once across restarts)."""

    def __init__(self, used_file: Path) -> None:
        self.used_file = used_file
        self.sessions: dict[str, Session] = {}
        self._used = set(used_file.read_text().split()) if used_file.exists() else set()

    def use_link(self, nonce: str, now: datetime) -> bool:
        if nonce in self._used:
            return False
        self._used.add(nonce)
        with self.used_file.open("a", encoding="utf-8") as used:
            used.write(nonce + "\n")
        return True

    def open(self, session_id: str, person: str, expires: datetime) -> Session:
        session = Session(person, secrets.token_urlsafe(32), expires)
        self.sessions[session_id] = session
        return session

    def find(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def close(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)


class RecWebSession(SQLModel, table=True):
    """A signed-in browser, by the digest of its cookie."""

    __tablename__ = "rec_web_session"

    id: str = Field(primary_key=True)
    person: str
    csrf: str
    expires: str = Field(index=True)  # wire time


class RecWebForm(SQLModel, table=True):
    """A form one approver rendered for a session; any approver on the store accepts it once."""

    __tablename__ = "rec_web_form"

    nonce: str = Field(primary_key=True)
    session: str = Field(index=True)
    used: bool = False


class RecWebLinkUsed(SQLModel, table=True):
    """A sign-in link's nonce, once the link was used: the primary key lets one approver have it."""

    __tablename__ = "rec_web_link_used"

    nonce: str = Field(primary_key=True)
    at: str


_SESSION = SQLModel.metadata.tables["rec_web_session"]
_FORM = SQLModel.metadata.tables["rec_web_form"]
_LINK_USED = SQLModel.metadata.tables["rec_web_link_used"]
WEB_SCHEMA = 1
"""The version of the approver's tables (``hatp_schema`` part ``web``)."""
WEB_TABLES = [_SESSION, _FORM, _LINK_USED]


def session_digest(session_id: str) -> str:
    """How a session id (the cookie) is stored."""
    return "sha256:" + hashlib.sha256(session_id.encode()).hexdigest()


class StoredForms:
    """One session's form nonces in the database."""

    def __init__(self, engine: Engine, session: str) -> None:
        self.engine = engine
        self.session = session

    def new(self) -> str:
        nonce = secrets.token_urlsafe(16)
        with self.engine.begin() as connection:
            connection.execute(insert(_FORM), {"nonce": nonce, "session": self.session, "used": False})
        return nonce

    def use(self, nonce: str) -> None:
        ours = (_FORM.c.nonce == nonce) & (_FORM.c.session == self.session)
        with self.engine.begin() as connection:
            taken = connection.execute(update(_FORM).where(ours & ~_FORM.c.used).values(used=True))
            if taken.rowcount == 1:
                return
            used = connection.execute(select(_FORM.c.used).where(ours)).scalar()
        _refuse_form(used)


class StoredSessions:
    """Sessions, forms and used link nonces in the Recorder's database, shared by every approver on it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        ensure_schema(engine, "web", WEB_SCHEMA, WEB_TABLES)

    def use_link(self, nonce: str, now: datetime) -> bool:
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(_LINK_USED), {"nonce": nonce, "at": wire_time(now)})
        except IntegrityError:
            return False
        self._forget_expired(now)
        return True

    def open(self, session_id: str, person: str, expires: datetime) -> Session:
        digest, csrf = session_digest(session_id), secrets.token_urlsafe(32)
        row = {"id": digest, "person": person, "csrf": csrf, "expires": wire_time(expires)}
        with self.engine.begin() as connection:
            connection.execute(insert(_SESSION), row)
        return Session(person, csrf, parse_wire_time(row["expires"]), StoredForms(self.engine, digest))

    def find(self, session_id: str) -> Session | None:
        digest = session_digest(session_id)
        with self.engine.connect() as connection:
            row = connection.execute(select(_SESSION).where(_SESSION.c.id == digest)).first()
        if row is None:
            return None
        return Session(row.person, row.csrf, parse_wire_time(row.expires), StoredForms(self.engine, digest))

    def close(self, session_id: str) -> None:
        digest = session_digest(session_id)
        with self.engine.begin() as connection:
            connection.execute(delete(_FORM).where(_FORM.c.session == digest))
            connection.execute(delete(_SESSION).where(_SESSION.c.id == digest))

    def _forget_expired(self, now: datetime) -> None:
        """Sessions past their end, and their forms: done at each sign-in, so the tables stay small."""
        ended = select(_SESSION.c.id).where(_SESSION.c.expires < wire_time(now))
        with self.engine.begin() as connection:
            connection.execute(delete(_FORM).where(_FORM.c.session.in_(ended)))
            connection.execute(delete(_SESSION).where(_SESSION.c.id.in_(ended)))


def _refuse_form(used: bool | None) -> None:
    if used is None:
        raise WebRefusal(WebCode.FORM_STALE, "this form is too old or was altered: reload the page")
    if used:
        raise WebRefusal(WebCode.FORM_USED, "this form was already sent; only the first one counts")
