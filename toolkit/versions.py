"""Helpers for versioned resources: revision labels, content tags, summaries.

A server keeps a revision label ("v12") for people and a content tag for the
toolkit: when undoing a later edit brings a resource back to the content an
earlier step left, the tags match and the earlier undo sees no false conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import SQLModel

from hatp_journal.toolkit.canonical import content_etag
from hatp_journal.toolkit.clock import wire_time
from hatp_journal.toolkit.effects import ResourceState

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


def summarize(subject: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A summary written from stored values: ``"Deal D-881 stage: Proposal → Won"``."""
    changed = [
        f"{name}: {before.get(name)} → {after.get(name)}"
        for name in after
        if before.get(name) != after.get(name)
    ]
    return f"{subject} " + ("; ".join(changed) if changed else "unchanged")


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
