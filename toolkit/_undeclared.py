"""A journaled call must name every resource it writes: the rows it versions are compared with its effect.

An undo checks only the resources the effect names (``effect.resource`` and ``Effect.also``). A row
the call changed but did not name would be put back by the compensation without any check, over a
colleague's later edit. For rows kept with :class:`~hatp_journal.toolkit._revisions.Versioned` the
toolkit can see this: every such row the call created or gave a new version must carry the version
(and content tag, where the effect gives one) of a resource the effect names. A call that versions
more rows than it names fails (``TOOL_FAILED``) and its change is rolled back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import event, inspect
from sqlmodel import Session

from hatp_journal.toolkit._effects import Effect
from hatp_journal.toolkit._revisions import Versioned


class VersionedWrites:
    """The :class:`Versioned` rows a session creates or re-versions while a call runs."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._rows: dict[int, Versioned] = {}
        event.listen(session, "before_flush", self._collect)

    def close(self) -> None:
        """Stop watching the session."""
        event.remove(self.session, "before_flush", self._collect)

    def _collect(self, session: Session, *_: Any) -> None:
        for row in [*session.new, *session.dirty]:
            if not isinstance(row, Versioned):
                continue
            if row in session.new or inspect(row).attrs.version.history.has_changes():
                self._rows[id(row)] = row

    def undeclared(self, effect: Effect) -> list[str]:
        """The rows versioned so far that carry no version the effect names (``table at version``)."""
        self._collect(self.session)
        declared = [(effect.version, effect.etag), *((write.version, write.etag) for write in effect.also)]
        return [
            f"a {getattr(row, '__tablename__', type(row).__name__)} row now at {row.version}"
            for row in self._rows.values()
            if not _named(row, declared)
        ]


def _named(row: Versioned, declared: Sequence[tuple[str | None, str | None]]) -> bool:
    return any(version == row.version and etag in (None, row.etag) for version, etag in declared)
