"""A server's signed objects as the Recorder's readers see them: the journal object a call kept,
and a ``check`` answer. One that does not fit the wire format reads as :class:`Unreadable`."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.recorder.record.unreadable import BodyModel, ReadCode, Unreadable, WireTime, unreadable
from hatp_journal.toolkit.wire import CallBinding, EffectInfo, Money, Receipt, UndoAnswer, UndoKind, Via


class KeptUndo(BodyModel):
    """``journal.undo``: the undo terms, ``undoBy`` a wire time."""

    model_config = ConfigDict(extra="forbid")

    kind: UndoKind
    undo_by: WireTime | None = None
    via: Via = "api"
    side_effects: list[str] = Field(default_factory=list)
    cost: Money | None = None


class KeptJournal(BodyModel):
    """A verified journal object as a call entry keeps it: the token replaced by its digest."""

    model_config = ConfigDict(extra="forbid")

    protocol: str | None = None
    server: str
    read: bool = False
    undo: KeptUndo | None = None
    compensation_token_digest: str | None = None
    effect: EffectInfo | None = None
    reason: str | None = None
    remedy: str | None = None
    call: CallBinding | None = None
    receipt: Receipt | None = None


def read_journal(raw: Any) -> KeptJournal | Unreadable:
    """A verified journal object read through :class:`KeptJournal`, or why it can't be."""
    try:
        return KeptJournal.model_validate(raw)
    except ValidationError as error:
        return unreadable(ReadCode.JOURNAL_UNREADABLE, error)


def read_check_answer(raw: Any) -> UndoAnswer | Unreadable:
    """A signed ``check`` answer read with the wire's :class:`UndoAnswer`; its ``undoBy`` must be a
    wire time, since the planner compares it with the clock."""
    try:
        answer = UndoAnswer.model_validate(raw)
    except ValidationError as error:
        return unreadable(ReadCode.CHECK_ANSWER_UNREADABLE, error)
    if answer.undo_by is not None and not is_wire_time(answer.undo_by):
        return Unreadable(code=ReadCode.CHECK_ANSWER_UNREADABLE, detail="undoBy")
    return answer
