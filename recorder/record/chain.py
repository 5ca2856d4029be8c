"""The hash chain: RFC 8785 canonical bytes, SHA-256, a genesis bound to the run's metadata."""

from __future__ import annotations

import hashlib
from typing import Any

from hatp_journal._shared.canonical import canonical_and_plain, sha256_digest
from hatp_journal.recorder.record.models import Run


def genesis_hash(run: Run) -> str:
    """The ``prevHash`` of a run's first entry (and the head of an empty run).

    It covers the run's id, agent, principal and opening time, so those fields of an
    exported record are as tamper-evident as the entries.
    """
    return sha256_digest(
        {
            "genesis": True,
            "run": run.id,
            "agent": run.agent,
            "principal": run.principal,
            "openedAt": run.opened_at,
        }
    )


def entry_id(seq: int) -> str:
    """The id of the entry at ``seq``: ``e1``, ``e2``, …"""
    return f"e{seq}"


def seal(hashed: dict[str, Any]) -> tuple[bytes, str]:
    """The canonical bytes of an entry (without ``hash``) and their ``sha256:`` digest."""
    data, digest, _ = seal_and_plain(hashed)
    return data, digest


def seal_and_plain(hashed: dict[str, Any]) -> tuple[bytes, str, bool]:
    """:func:`seal`, and whether ``hashed`` is plain JSON: what parsing its bytes gives back
    (``canonical_and_plain``), so the entry just written need not be parsed back."""
    data, plain = canonical_and_plain(hashed)
    return data, "sha256:" + hashlib.sha256(data).hexdigest(), plain
