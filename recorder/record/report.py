"""The verification report: stable problem codes and the entry each concerns."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from hatp_journal.toolkit.wire import WireModel


class Check(StrEnum):
    """Stable codes of verification problems; tests and tools compare codes, not text."""

    MALFORMED = "MALFORMED"
    NOT_CANONICAL = "NOT_CANONICAL"
    HASH_MISMATCH = "HASH_MISMATCH"
    CHAIN_BROKEN = "CHAIN_BROKEN"
    SEQ_GAP = "SEQ_GAP"
    ID_MISMATCH = "ID_MISMATCH"
    RUN_MISMATCH = "RUN_MISMATCH"
    BAD_CHECKPOINT_SIGNATURE = "BAD_CHECKPOINT_SIGNATURE"
    CHECKPOINT_MISMATCH = "CHECKPOINT_MISMATCH"
    UNSIGNED_TAIL = "UNSIGNED_TAIL"
    ROLLBACK = "ROLLBACK"
    KEY_SUBSTITUTED = "KEY_SUBSTITUTED"
    RECEIPT_INVALID = "RECEIPT_INVALID"
    REMEDY_UNKNOWN_ENTRY = "REMEDY_UNKNOWN_ENTRY"
    CHECK_RECEIPT_INVALID = "CHECK_RECEIPT_INVALID"
    UNDO_RECEIPT_INVALID = "UNDO_RECEIPT_INVALID"
    PLAN_DIGEST_MISMATCH = "PLAN_DIGEST_MISMATCH"
    APPROVAL_TARGET_MISMATCH = "APPROVAL_TARGET_MISMATCH"
    APPROVAL_SIGNATURE_INVALID = "APPROVAL_SIGNATURE_INVALID"
    APPROVER_NOT_AUTHORIZED = "APPROVER_NOT_AUTHORIZED"
    OVERRIDE_INVALID = "OVERRIDE_INVALID"
    DIRECTORY_MISSING = "DIRECTORY_MISSING"
    DIRECTORY_MISMATCH = "DIRECTORY_MISMATCH"
    TOKEN_IN_RECORD = "TOKEN_IN_RECORD"
    UNKNOWN_KIND = "UNKNOWN_KIND"
    BAD_BODY = "BAD_BODY"
    BAD_TIME = "BAD_TIME"
    DUPLICATE_KEY = "DUPLICATE_KEY"
    DIRECTORY_NOT_PINNED = "DIRECTORY_NOT_PINNED"
    CALL_DIGEST_MISMATCH = "CALL_DIGEST_MISMATCH"
    RECEIPT_REPLAYED = "RECEIPT_REPLAYED"
    RECEIPT_MISPLACED = "RECEIPT_MISPLACED"
    PIN_SIGNATURE_INVALID = "PIN_SIGNATURE_INVALID"
    DECISION_UNKNOWN_TARGET = "DECISION_UNKNOWN_TARGET"
    # Witnessed heads (docs/run-record.md, "Witnessed heads"):
    WITNESS_MISSING = "WITNESS_MISSING"
    BAD_COSIGNATURE = "BAD_COSIGNATURE"
    WITNESS_AHEAD = "WITNESS_AHEAD"
    WITNESS_FORKED = "WITNESS_FORKED"
    WITNESS_NO_HEAD = "WITNESS_NO_HEAD"


class Problem(WireModel):
    """One failed check: which entry (``None`` for the file as a whole), which check, and why."""

    entry: str | None = None
    check: Check
    detail: str


class VerifyReport(WireModel):
    """The outcome of :func:`verify_record`. ``ok`` means no problem was found; ``flagged`` ones
    are shown too and fail ``hatp-recorder verify`` unless it is told to accept them."""

    ok: bool
    problems: list[Problem] = Field(default_factory=list)
    flagged: list[Problem] = Field(
        default_factory=list,
        description="Signatures that fail where the Recorder already said so: receipts it marked "
        "unresolved at intake, decisions it recorded as not counted",
    )
    entries: int = 0
    signed_size: int = Field(default=0, description="Entries covered by the last valid checkpoint")
    receipts_checked: int = 0
    trusted_from_file: list[str] = Field(
        default_factory=list,
        description="What the verifier did not pin and took from the file itself (trust on first use)",
    )

    def codes(self) -> set[str]:
        """The distinct problem codes."""
        return {problem.check.value for problem in self.problems}

    def flagged_codes(self) -> set[str]:
        """The distinct codes of flagged problems."""
        return {problem.check.value for problem in self.flagged}


class Findings:
    """Problems collected while verifying (internal).

    A check whose verdict comes later (a signature checked on another process) holds its place
    with :meth:`hold`: what it finds is put there by :meth:`settle`, so problems are listed in the
    order of the checks, however the verdicts arrive.
    """

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.flagged: list[Problem] = []
        self._held: list[tuple[int, int, Findings]] = []

    def add(self, check: Check, entry: str | None, detail: str) -> None:
        self.problems.append(Problem(entry=entry, check=check, detail=detail))

    def flag(self, check: Check, entry: str | None, detail: str) -> None:
        self.flagged.append(Problem(entry=entry, check=check, detail=detail))

    def hold(self) -> tuple[int, int]:
        """The place, after what is found so far, of what a later verdict will find."""
        return len(self.problems), len(self.flagged)

    def put(self, place: tuple[int, int], later: Findings) -> None:
        """Keep what a later verdict found (``later``) for its place. Places are put in the order
        they were held; an empty one costs nothing, so memory grows with problems only."""
        if later.problems or later.flagged:
            self._held.append((*place, later))

    def settle(self) -> None:
        """Put what was found later where its place was held (once every verdict is in)."""
        if not self._held:
            return
        problems: list[Problem] = []
        flagged: list[Problem] = []
        taken_problems = taken_flagged = 0
        for at_problems, at_flagged, later in self._held:
            problems += self.problems[taken_problems:at_problems] + later.problems
            flagged += self.flagged[taken_flagged:at_flagged] + later.flagged
            taken_problems, taken_flagged = at_problems, at_flagged
        self.problems = problems + self.problems[taken_problems:]
        self.flagged = flagged + self.flagged[taken_flagged:]
        self._held = []
