"""Compensation tokens, kept where only the Recorder reads them.

A token is a live capability on its tool server, so it never enters the Run Record: an entry
keeps the journal object with ``compensationTokenDigest`` in its place (the form the server's
receipt signs, so the receipt still verifies), and the token itself waits here, under that
digest, until an undo needs it. Exports and ``show`` therefore carry nothing usable; and a token
minted through this Recorder compensates only with its signature (``docs/binding.md``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from hatp_journal.recorder.intake.journal_objects import Intake
from hatp_journal.recorder.record.tables import RecToken
from hatp_journal.toolkit.signing import VerifyKey, token_digest, without_token
from hatp_journal.toolkit.wire import META_KEY, RECORDER_META_KEY, CallBinding

TOKEN_KEY = "compensationToken"

BAD_JOURNAL = "BAD_JOURNAL"
"""The code of a result whose journal object or token is anywhere but ``_meta["hatp/journal"]``."""


def new_call(run: str) -> CallBinding:
    """A call binding for one call of ``run``: an id never used twice (128 random bits), which the
    server echoes in the journal object it signs (``docs/binding.md``)."""
    return CallBinding(run=run, id=secrets.token_urlsafe(16))


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


def misplaced(result: Any) -> str | None:
    """Where ``result`` (a tool result as received) holds a journal object or a compensation token
    anywhere but the one documented place, the top level of the object ``_meta["hatp/journal"]``;
    None if it holds none elsewhere.

    Only there is a token found, replaced by its digest and kept from the agent; one wrapped in a
    list or nested anywhere else would reach the record, the export and the agent as it came, so
    such a result is refused whole (``BAD_JOURNAL``). Walks iteratively, keys only: a result parsed
    from JSON holds only dicts and lists, and a string never hides a member.
    """
    if type(result) is not dict:
        return None
    meta = result.get("_meta")
    journal = meta.get(META_KEY) if type(meta) is dict else None
    if type(journal) is list:
        return f"_meta[{META_KEY!r}] is an array, not one journal object"
    # Each node is (value, its key or index, its parent's node): the path is spelled only on a find.
    stack: list[_Node] = [(result, "result", None)]
    while stack:
        node = stack.pop()
        value: Any = node[0]
        if type(value) is dict:
            members: dict[str, Any] = value
            if TOKEN_KEY in members and members is not journal:
                return f"a {TOKEN_KEY} member in {_path(node)}"
            if META_KEY in members and members is not meta:
                return f"a {META_KEY!r} member in {_path(node)}"
            stack.extend((child, key, node) for key, child in members.items() if type(child) in _CONTAINERS)
        elif type(value) is list:
            stack.extend(
                (child, index, node) for index, child in enumerate(value) if type(child) in _CONTAINERS
            )
    return None


_Node = tuple[Any, "str | int", Any]
_CONTAINERS = (dict, list)


def _path(node: _Node | None) -> str:
    parts: list[str] = []
    while node is not None:
        key = node[1]
        parts.append(f"[{key}]" if isinstance(key, int) else key if node[2] is None else f".{key}")
        node = node[2]
    return "".join(reversed(parts))


def refused_journal(astray: str) -> dict[str, Any]:
    """The ``intake`` and ``journal`` members of a call whose result put a journal object or token
    astray (:func:`~hatp_journal.recorder.intake.tokens.misplaced`): unresolved, nothing of it kept."""
    why = f"{BAD_JOURNAL}: {astray}"
    return {
        "intake": Intake("unresolved", "unknown", why).wire(),
        "journal": {"rejected": f"not kept: {why}"},
    }


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
