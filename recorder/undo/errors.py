"""Why an undo request, approval or execution was refused: a stable code and one clear line."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


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
    UNDO_ALREADY_REQUESTED = "UNDO_ALREADY_REQUESTED"
    NOTHING_TO_UNDO = "NOTHING_TO_UNDO"


class UndoError(Exception):
    """An undo request that was refused before anything (more) was compensated; ``details`` is what a
    program reads of why (for ``NOTHING_TO_UNDO``: the plan's sections, each step with its reason)."""

    def __init__(
        self, code: UndoCode, message: str, details: dict[str, Any] | None = None, *, unfiled: Any = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}
        self.unfiled = unfiled
        """For ``NOTHING_TO_UNDO``: the plan as built, shown to whoever asked, never filed."""
