"""Helpers for versioned resources: revision labels, content tags, summaries.

A server keeps a revision label ("v12") for people and a content tag for the
toolkit: when undoing a later edit brings a resource back to the content an
earlier step left, the tags match and the earlier undo sees no false conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hatp_journal.toolkit.canonical import content_etag

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
