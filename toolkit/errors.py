"""One error hierarchy for the toolkit, mapped to the stable wire codes (SPEC §4).

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


class StoreError(ValueError):
    """The undo store can't be opened (its path is a folder, unwritable, or not a database)."""
