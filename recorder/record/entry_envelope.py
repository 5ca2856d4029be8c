"""An entry's envelope as the verifier reads it: the entry made from its JSON without validating
again when it is exactly as the Recorder writes one, and its hash recomputed (``verify.py``)."""

from __future__ import annotations

import hashlib
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.chain import seal
from hatp_journal.recorder.record.models import Entry

_ENTRY_MEMBERS = frozenset({"id", "run", "seq", "time", "kind", "body", "prevHash", "hash"})


def lean_entry(raw: Any) -> Entry | None:
    """The entry, when ``raw`` is exactly as the Recorder writes one (every member, of its exact
    JSON type, nothing else): the strict model would accept it as it is, so it is made without
    validating again (validating took longer than the rest of an entry's envelope). None for
    anything else, which the model then validates (and explains)."""
    if type(raw) is not dict or raw.keys() != _ENTRY_MEMBERS:
        return None
    seq, kind = raw["seq"], raw["kind"]
    if not (
        type(seq) is int
        and seq >= 1
        and type(kind) is str
        and kind
        and type(raw["body"]) is dict
        and type(raw["id"]) is str
        and type(raw["run"]) is str
        and type(raw["time"]) is str
        and type(raw["prevHash"]) is str
        and type(raw["hash"]) is str
    ):
        return None
    entry = Entry.__new__(Entry)
    # What ``model_construct`` sets, without its generic work (it cost more than validating).
    fields = {
        "id": raw["id"],
        "run": raw["run"],
        "seq": seq,
        "time": raw["time"],
        "kind": kind,
        "body": raw["body"],
        "prev_hash": raw["prevHash"],
        "hash": raw["hash"],
    }
    object.__setattr__(entry, "__dict__", fields)
    object.__setattr__(entry, "__pydantic_fields_set__", set(_ENTRY_FIELDS))
    object.__setattr__(entry, "__pydantic_extra__", None)
    object.__setattr__(entry, "__pydantic_private__", None)
    return entry


_ENTRY_FIELDS = frozenset(Entry.model_fields)


def canonical_entry(entry: Entry) -> bytes | None:
    try:
        return canonical_bytes(entry.hashed())
    except (ValueError, TypeError, RecursionError):
        return None


def rehash(entry: Entry, stored: bytes | None) -> str:
    """The entry's true hash: of the bytes as written when available, else re-serialized; "" if neither."""
    if stored is not None:
        return "sha256:" + hashlib.sha256(stored).hexdigest()
    try:
        return seal(entry.hashed())[1]
    except (ValueError, TypeError, RecursionError):
        return ""
