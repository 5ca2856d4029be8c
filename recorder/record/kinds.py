"""The one list of entry kinds a Recorder writes (``docs/run-record.md``).

The verifier reports any other kind as ``UNKNOWN_KIND``; the readers' union of bodies
(``entry_bodies.TypedEntry``) has one member per kind, and a test holds the two equal.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

EntryKind = Literal[
    "call",
    "ask",
    "decision",
    "refused",
    "withdrawn",
    "plan",
    "undo-intent",
    "undo-outcome",
    "undo-halted",
    "reversal",
    "link",
    "review",
    "reminder",
    "escalation",
    "lapse",
    "mail-failed",
    "mail-deferred",
    "mail-delivered",
    "seen",
    "note",
]
"""Every entry kind, as a type: a writer or a reader naming another kind fails the type check."""

KNOWN_KINDS: Final[frozenset[str]] = frozenset(get_args(EntryKind))
"""Every entry kind, as a set (what the verifier checks a stored entry's kind against)."""

NoticeKind = Literal["review", "reminder", "escalation", "lapse"]
"""The kinds ``tick`` writes, one per step and kind."""

MailKind = Literal["mail-failed", "mail-deferred", "mail-delivered"]
"""What became of a notice's mail."""
