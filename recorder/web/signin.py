"""Sign-in for the demo: a signed, expiring, one-time link per person, then a session cookie.

A link is ``/signin?token=…`` where the token carries the person, an expiry and a nonce, signed
with HMAC-SHA256 under the approver's secret file. Used nonces are written to a file beside the
secret, so a link works once even across restarts. Sessions live in memory: a restart signs
everyone out. Production should sign people in through the organisation's identity provider
(OIDC/SAML) instead — see docs/web.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from hatp_journal.recorder.web.errors import WebCode, WebRefusal
from hatp_journal.toolkit.signing import b64url, b64url_decode

# A session remembers this many form nonces; older unused forms then read as stale.
_FORMS_KEPT = 500
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


@dataclass
class Session:
    """One signed-in person in one browser."""

    person: str
    csrf: str
    expires: datetime
    forms: dict[str, bool] = field(default_factory=dict)  # nonce → already used

    def new_form(self) -> str:
        """A nonce for one rendered form: a second submit of the same form is recognised."""
        nonce = secrets.token_urlsafe(16)
        self.forms[nonce] = False
        while len(self.forms) > _FORMS_KEPT:
            del self.forms[next(iter(self.forms))]
        return nonce


class SignIn:
    """Checks sign-in links and keeps the sessions they open."""

    def __init__(self, secret: bytes, used_file: Path, session_length: timedelta) -> None:
        self.secret = secret
        self.used_file = used_file
        self.session_length = session_length
        self.sessions: dict[str, Session] = {}
        self._used = set(used_file.read_text().split()) if used_file.exists() else set()

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
        if nonce in self._used:
            raise WebRefusal(
                WebCode.SIGNIN_USED, f"this sign-in link was already used (each link works once): {NEW_LINK}"
            )
        self._used.add(nonce)
        with self.used_file.open("a", encoding="utf-8") as used:
            used.write(nonce + "\n")
        session_id = secrets.token_urlsafe(32)
        session = Session(person, secrets.token_urlsafe(32), now + self.session_length)
        self.sessions[session_id] = session
        return session_id, session

    def session(self, session_id: str | None, now: datetime) -> Session:
        """The live session behind a cookie; SIGNIN_REQUIRED if there is none or it expired."""
        session = self.sessions.get(session_id or "")
        if session is None:
            raise WebRefusal(WebCode.SIGNIN_REQUIRED, "sign in with the link you were given")
        if now > session.expires:
            del self.sessions[session_id or ""]
            raise WebRefusal(WebCode.SIGNIN_REQUIRED, f"your sign-in has expired: {NEW_LINK}")
        return session

    def check_csrf(self, session: Session, csrf: str) -> None:
        """Refuse a form without this session's CSRF token."""
        if not hmac.compare_digest(csrf.encode(), session.csrf.encode()):
            raise WebRefusal(WebCode.CSRF_FAILED, "this form did not come from your approver page")

    def use_form(self, session: Session, nonce: str) -> None:
        """Mark one rendered form as sent; a second submit of it (or an unknown one) is refused."""
        used = session.forms.get(nonce)
        if used is None:
            raise WebRefusal(WebCode.FORM_STALE, "this form is too old or was altered: reload the page")
        if used:
            raise WebRefusal(WebCode.FORM_USED, "this form was already sent; only the first one counts")
        session.forms[nonce] = True
