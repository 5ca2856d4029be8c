"""How a reader marks what it could not read: :class:`Unreadable`, with a stable :class:`ReadCode`.

Also the base of the readers' models (:class:`BodyModel`) and the record's time type (:data:`WireTime`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.alias_generators import to_camel

from hatp_journal._shared.text import shown
from hatp_journal.recorder.record.times import is_wire_time


class ReadCode(StrEnum):
    """Why a reader could not use what was recorded (stable, shown next to the entry)."""

    BODY_UNREADABLE = "BODY_UNREADABLE"
    """An entry's body is not of the shape its kind has."""
    JOURNAL_UNREADABLE = "JOURNAL_UNREADABLE"
    """A journal object recorded as verified does not fit the wire format (an ``undoBy`` that is not
    a wire time, a field of the wrong type): its server signed something no reader can use."""
    CHECK_ANSWER_UNREADABLE = "CHECK_ANSWER_UNREADABLE"
    """A signed ``check`` answer that does not fit the wire format (a ``versionFound`` that is not a
    string, ``changes`` that is not a list, an ``undoBy`` that is not a wire time)."""


def _wire_time(value: str) -> str:
    if not is_wire_time(value):
        raise ValueError("not a wire time (YYYY-MM-DDTHH:MM:SSZ, UTC, to the second)")
    return value


WireTime = Annotated[str, AfterValidator(_wire_time)]
"""A time as the record writes it; offsets, fractions, leap seconds and dates alone are refused."""


class BodyModel(BaseModel):
    """Base: camelCase members, unnamed members kept, named ones typed."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True)


class Unreadable(BaseModel):
    """The marker every reader shows for an entry it could not read: the code, and what did not fit."""

    model_config = ConfigDict(frozen=True)

    code: ReadCode
    detail: str

    def text(self) -> str:
        """``JOURNAL_UNREADABLE: undo.undoBy``: how the entry reads where its contents would (every
        control character escaped: a member's name may be anything)."""
        return shown(f"{self.code}: {self.detail}")


_PLACE_CHARS = 80
"""How much of a member's path a marker shows (a hostile key may be of any length)."""


def unreadable(code: ReadCode, error: ValidationError) -> Unreadable:
    """The marker for ``error``, naming the members that did not fit (never their values)."""
    places = [".".join(str(part) for part in e["loc"]) or "(the whole object)" for e in error.errors()[:5]]
    cut = [place if len(place) <= _PLACE_CHARS else place[:_PLACE_CHARS] + "…" for place in places]
    return Unreadable(code=code, detail=", ".join(dict.fromkeys(cut)))


def _absent_if_unfit(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


OrAbsent = WrapValidator(_absent_if_unfit)
"""``Annotated[X | None, OrAbsent] = None``: a member that does not fit reads as absent, for a reader
that has always skipped what it could not use (a courier, the links) rather than the whole entry."""
