"""Compensation tokens, kept where only the Recorder reads them.

A token is a live capability on its tool server, so it never enters the Run Record: an entry
keeps the journal object with ``compensationTokenDigest`` in its place (the form the server's
receipt signs, so the receipt still verifies), and the token itself waits here, under that
digest, until an undo needs it. Exports and ``show`` therefore carry nothing usable; and a token
minted through this Recorder compensates only with its signature (``docs/binding.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from hatp_journal.recorder.record.tables import RecToken
from hatp_journal.toolkit.signing import VerifyKey, token_digest, without_token
from hatp_journal.toolkit.wire import RECORDER_META_KEY


def recorder_announcement(key: VerifyKey) -> dict[str, Any]:
    """The request ``_meta`` that binds the tokens a tool server mints to this Recorder's key."""
    return {RECORDER_META_KEY: {"key": key.wire().wire()}}


Kept = tuple[str, str, str]
"""A token to keep with an entry: (digest, server, token), written in the entry's transaction."""


def redact(server: str, journal: Any) -> tuple[Any, list[Kept]]:
    """``journal`` (an object as received) as it may be recorded — its token replaced by the
    digest — and the token to keep. Anything without a token is returned as is."""
    if not isinstance(journal, Mapping) or "compensationToken" not in journal:
        return journal, []
    token = journal["compensationToken"]
    try:
        kept = without_token(journal)
    except ValueError:
        # Not a string, or sent along with a digest of its own: nothing usable; keep neither.
        return {k: v for k, v in journal.items() if k != "compensationToken"}, []
    return kept, [(token_digest(token), server, token)]


class TokenStore:
    """The Recorder's tokens, in its store (written by ``RunStore.append(..., tokens=…)``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine  # the RunStore's: it creates the table

    def token(self, digest: str | None) -> str | None:
        """The token stored under ``digest``, if this Recorder holds it."""
        if not digest:
            return None
        with Session(self.engine) as session:
            row = session.get(RecToken, digest)
            return row.token if row is not None else None
