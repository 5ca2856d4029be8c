"""One error hierarchy for the Run Record store."""

from __future__ import annotations


class RecordError(Exception):
    """Base of every error the Run Record store raises."""


class UnknownRun(RecordError, LookupError):
    """No run with this id is stored."""


class UnknownEntry(RecordError, LookupError):
    """The run has no entry with this id."""


class RunExists(RecordError):
    """A run with this id is already stored; run ids are never reused."""


class BadEntry(RecordError, ValueError):
    """An entry (or run field) that cannot be recorded, e.g. a body that is not canonical JSON."""
