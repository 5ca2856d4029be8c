"""One error hierarchy for the toolkit, mapped to the stable wire codes (protocol.md §4).

Tests and clients assert the ``code``, never the message text.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Stable error codes carried on the wire."""

    UNDO_CONFLICT = "UNDO_CONFLICT"
    UNDO_EXPIRED = "UNDO_EXPIRED"
    UNDO_UNVERIFIED = "UNDO_UNVERIFIED"
    UNDO_UNKNOWN_TOKEN = "UNDO_UNKNOWN_TOKEN"
    UNDO_FAILED = "UNDO_FAILED"
    UNDO_NOT_AUTHORIZED = "UNDO_NOT_AUTHORIZED"
    """The token was issued through a Recorder and the request carries no valid proof by its key."""
    UNDO_OVERRIDE_REFUSED = "UNDO_OVERRIDE_REFUSED"
    """An override the server cannot verify: the token is bound to no Recorder key."""
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    TOOL_FAILED = "TOOL_FAILED"
    TOOL_CRASHED = "TOOL_CRASHED"


class JournalError(Exception):
    """Base of every error the toolkit raises at run time."""

    code: ErrorCode = ErrorCode.UNDO_FAILED

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class UndoFailed(JournalError):
    """A compensation could not run; the resource was left as it was.

    ``UndoFailed(message, evidence=[...])`` keeps what the compensation saw (screenshots, logs)
    in the signed answer.
    """

    code = ErrorCode.UNDO_FAILED


class UndoUnverified(JournalError):
    """A compensation ran but reading the resource back did not show the prior state."""

    code = ErrorCode.UNDO_UNVERIFIED


class ToolFailed(JournalError):
    """A journaled tool refused its input or failed; nothing was journaled."""

    code = ErrorCode.TOOL_FAILED


class DeclarationError(TypeError):
    """A decorator or registration was misused. Raised at import/registration time."""


class KeyFileError(ValueError):
    """A signing key file is missing, malformed or of the wrong type."""


class StoreCode(StrEnum):
    """Why a store (the undo store, the Recorder's store) can't be used; stable, for tests and scripts."""

    STORE_BAD_URL = "STORE_BAD_URL"
    """Not a database URL this installation can use (unknown scheme or driver, malformed)."""
    STORE_UNREACHABLE = "STORE_UNREACHABLE"
    """The database server did not answer, or refused the connection or the login."""
    STORE_UNUSABLE = "STORE_UNUSABLE"
    """A SQLite path that is a folder, can't be made, or holds something that is not a database."""
    STORE_SCHEMA_NEWER = "STORE_SCHEMA_NEWER"
    """The store's schema is of a later version than this code knows: upgrade before using it."""
    STORE_SCHEMA_MISSING = "STORE_SCHEMA_MISSING"
    """The store has not been created yet (``check`` only: starting a store creates it)."""


class StoreError(ValueError):
    """The store can't be opened or used; ``code`` says why (:class:`StoreCode`)."""

    def __init__(self, message: str, code: StoreCode = StoreCode.STORE_UNUSABLE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
