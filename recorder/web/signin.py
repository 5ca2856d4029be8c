"""Sign-in for the demo: a signed, expiring, one-time link per person, then a session cookie.

A link is ``/signin?token=…`` where the token carries the person, an expiry and a nonce, signed
with HMAC-SHA256 under the approver's secret file. A link works once, even across restarts. Where
sessions and used links are kept depends on the store (:mod:`.signin_store`): in memory and a file
beside the secret for a store on a file path (a restart signs everyone out), in the database for a
store on a database URL (every approver on it shares them). Production should sign people in
through the organisation's identity provider (OIDC/SAML) instead — see docs/web.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine

from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.recorder.web.signin_store import MemorySessions, Session, SessionKeeper, StoredSessions
from hatp_journal.toolkit.signing import b64url, b64url_decode

__all__ = ["NEW_LINK", "Session", "SignIn", "load_secret", "make_link_token"]

# How a person whose link is spent or old gets a new one (the pages cannot mail one themselves).
NEW_LINK = (
    "ask whoever runs the approver for a new sign-in link "
    "(they print one with `hatp-recorder web-link --as YOUR-ID`)"
)


def load_secret(path: Path) -> bytes:
    """The HMAC secret in ``path``, made (32 random bytes, owner-only) on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(32))
    return path.read_bytes()


def make_link_token(secret: bytes, person: str, *, now: datetime, valid_for: timedelta) -> str:
    """A one-time sign-in token for ``person``, usable until ``now + valid_for``."""
    claims = {"p": person, "exp": int((now + valid_for).timestamp()), "n": secrets.token_urlsafe(16)}
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{payload}.{_mac(secret, payload)}"


def _mac(secret: bytes, payload: str) -> str:
    return b64url(hmac.new(secret, payload.encode(), hashlib.sha256).digest())


class SignIn:
    """Checks sign-in links and keeps the sessions they open (where: see :mod:`.signin_store`)."""

    def __init__(
        self, secret: bytes, used_file: Path, session_length: timedelta, *, database: Engine | None = None
    ) -> None:
        self.secret = secret
        self.session_length = session_length
        self.kept: SessionKeeper = MemorySessions(used_file) if database is None else StoredSessions(database)

    def redeem(self, token: str, now: datetime) -> tuple[str, Session]:
        """Open a session for a valid, unexpired, unused link token; returns (session id, session)."""
        payload, _, mac = token.partition(".")
        if not mac or not hmac.compare_digest(mac, _mac(self.secret, payload)):
            raise WebRefusal(WebCode.SIGNIN_INVALID, "this sign-in link is not one the approver made")
        try:
            claims = json.loads(b64url_decode(payload))
            person, expires, nonce = str(claims["p"]), int(claims["exp"]), str(claims["n"])
        except (ValueError, KeyError, TypeError):
            raise WebRefusal(WebCode.SIGNIN_INVALID, "this sign-in link is malformed") from None
        if now.timestamp() > expires:
            raise WebRefusal(WebCode.SIGNIN_EXPIRED, f"this sign-in link has expired: {NEW_LINK}")
        if not self.kept.use_link(nonce, now):
            raise WebRefusal(
                WebCode.SIGNIN_USED, f"this sign-in link was already used (each link works once): {NEW_LINK}"
            )
        session_id = secrets.token_urlsafe(32)
        return session_id, self.kept.open(session_id, person, now + self.session_length)

    def session(self, session_id: str | None, now: datetime) -> Session:
        """The live session behind a cookie; SIGNIN_REQUIRED if there is none or it expired."""
        session = self.kept.find(session_id) if session_id else None
        if session is None:
            raise WebRefusal(WebCode.SIGNIN_REQUIRED, "sign in with the link you were given")
        if now > session.expires:
            self.kept.close(session_id or "")
            raise WebRefusal(WebCode.SIGNIN_REQUIRED, f"your sign-in has expired: {NEW_LINK}")
        return session

    def check_csrf(self, session: Session, csrf: str) -> None:
        """Refuse a form without this session's CSRF token."""
        if not hmac.compare_digest(csrf.encode(), session.csrf.encode()):
            raise WebRefusal(WebCode.CSRF_FAILED, "this form did not come from your approver page")

    def use_form(self, session: Session, nonce: str) -> None:
        """Mark one rendered form as sent; a second submit of it (or an unknown one) is refused."""
        session.forms.use(nonce)
