"""Why an undo request, approval or execution was refused: a stable code and one clear line."""

from __future__ import annotations

from enum import StrEnum


class UndoCode(StrEnum):
    """Stable codes for refused undo requests (also the CLI's first word on stderr)."""

    UNKNOWN_RUN = "UNKNOWN_RUN"
    UNKNOWN_PLAN = "UNKNOWN_PLAN"
    UNKNOWN_ENTRY = "UNKNOWN_ENTRY"
    STEP_OUT_OF_RANGE = "STEP_OUT_OF_RANGE"
    NOT_PERMITTED = "NOT_PERMITTED"
    NO_UNDO_AUTHORITY = "NO_UNDO_AUTHORITY"
    PLAN_STALE = "PLAN_STALE"
    PLAN_NOT_APPROVED = "PLAN_NOT_APPROVED"
    PLAN_DENIED = "PLAN_DENIED"
    BAD_OVERRIDE = "BAD_OVERRIDE"
    UNDO_BUSY = "UNDO_BUSY"
    NOT_A_REMEDY = "NOT_A_REMEDY"
    APPROVER_NO_LONGER_AUTHORIZED = "APPROVER_NO_LONGER_AUTHORIZED"


class UndoError(Exception):
    """An undo request that was refused before anything (more) was compensated."""

    def __init__(self, code: UndoCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
