"""Helpers for versioned resources: revision labels, content tags, summaries.

A server keeps a revision label ("v12") for people and a content tag for the
toolkit: when undoing a later edit brings a resource back to the content an
earlier step left, the tags match and the earlier undo sees no false conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import to_jsonable_python
from sqlmodel import SQLModel

from hatp_journal._shared.canonical import canonical_bytes, content_etag
from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._effects import ResourceState, Summary
from hatp_journal.toolkit.wire import EffectChange

_REVISION = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)$")


def next_revision(version: str) -> str:
    """``"v12"`` → ``"v13"``; a label without a trailing number gets ``"-1"`` appended first."""
    match = _REVISION.match(version)
    if match is None:
        return f"{version}-1"
    number = match.group("number")
    return f"{match.group('prefix')}{int(number) + 1:0{len(number)}d}"


@dataclass(frozen=True)
class Revision:
    """A version label and the content tag of the fields it names."""

    version: str
    etag: str

    @classmethod
    def of(cls, version: str, fields: Mapping[str, Any]) -> Revision:
        """The revision ``version`` holding ``fields``."""
        return cls(version, content_etag(dict(fields)))

    def bump(self, fields: Mapping[str, Any]) -> Revision:
        """The next revision, holding ``fields``."""
        return Revision.of(next_revision(self.version), fields)


def summarize(subject: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> Summary:
    """A summary written from stored values: ``"Deal D-881 stage: Proposal → Won"``.

    It carries the changes it shows, which the toolkit sends as ``effect.changes``.
    """
    changes = field_changes(before, after)
    return Summary(f"{subject} " + (changes_text(changes) if changes else "unchanged"), changes)


def field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[EffectChange]:
    """The fields of ``after`` whose stored value differs from ``before``, as JSON values."""
    return [
        EffectChange(field=name, before=_json(before.get(name)), after=_json(after.get(name)))
        for name in after
        if before.get(name) != after.get(name)
    ]


def changes_text(changes: Sequence[EffectChange], *, undone: bool = False) -> str:
    """``"available: 10 → 6; reserved: 0 → 4"``; ``undone`` turns every pair round."""
    return "; ".join(
        f"{change.field}: {value_text(change.after if undone else change.before)} → "
        f"{value_text(change.before if undone else change.after)}"
        for change in changes
    )


def value_text(value: Any) -> str:
    """A stored value as summaries show it: text as it is, anything else as its RFC 8785 JSON.

    JSON because that is what a summary's reader (the Recorder) holds: its record keeps the
    journal object canonical, so ``1.0`` comes back as ``1`` and objects with sorted keys.
    """
    if isinstance(value, str):
        return value
    try:
        return canonical_bytes(value).decode("utf-8")
    except (TypeError, ValueError, OverflowError):
        return str(value)  # not JSON (NaN, a huge number): shown as Python writes it


def _json(value: Any) -> Any:
    return to_jsonable_python(value, fallback=str)


class Versioned(SQLModel):
    """Columns every journaled row needs, and the bump that keeps them right.

    Inherit it in a table model (``class Deal(Versioned, table=True)``); after changing a row's
    fields call :meth:`record_change`, and answer the toolkit's state reader with :meth:`state`.
    ``fields`` are the values a person sees: they make the content tag.
    """

    version: str
    etag: str
    changed_by: str
    changed_at: str

    @property
    def revision(self) -> Revision:
        """The row's current revision."""
        return Revision(self.version, self.etag)

    def record_change(self, fields: Mapping[str, Any], *, by: str, at: datetime) -> tuple[Revision, Revision]:
        """Bump the version for ``fields`` (already applied) and say who changed it; (before, after)."""
        before = self.revision
        after = before.bump(fields)
        self.version, self.etag, self.changed_by, self.changed_at = (
            after.version,
            after.etag,
            by,
            wire_time(at),
        )
        return before, after

    def state(self, fields: Mapping[str, Any]) -> ResourceState:
        """The row as the toolkit's state reader reports it."""
        return ResourceState(self.version, fields, self.etag, self.changed_by)
