"""What a server check works with: the session, the server's keys, the operation, fresh calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from mcp.types import Tool
from pydantic import ValidationError

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.conformance.checks.outcome import CheckFailed, NotTestable, expect, require
from hatp_journal.conformance.session import Reply, TargetSession
from hatp_journal.toolkit.signing import VerifyKey, verify_answer
from hatp_journal.toolkit.wire import (
    META_KEY,
    Declaration,
    JournalObject,
    Sample,
    StateAnswer,
    UndoAnswer,
    UndoDeclaration,
)

Kind = Literal["compensate", "none", "read", "unknown"]


@dataclass(frozen=True)
class Operation:
    """One tool the target declares (anything but the binding and testing tools)."""

    tool: Tool
    declaration: Declaration | None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    @property
    def raw_declaration(self) -> Any:
        """``_meta["hatp/journal"]`` of its ``tools/list`` entry, as received."""
        return (self.tool.meta or {}).get(META_KEY)

    @property
    def undo(self) -> UndoDeclaration:
        """The declared undo terms (only checks of compensate and none operations ask)."""
        if self.declaration is None or self.declaration.undo is None:
            raise NotTestable(f"{self.name} declares no undo terms")
        return self.declaration.undo

    @property
    def kind(self) -> Kind:
        """How it can be undone, by its declaration."""
        declaration = self.declaration
        if declaration is None:
            return "unknown"
        if declaration.undo is not None:
            return declaration.undo.kind
        return "read" if declaration.read else "unknown"


@dataclass
class ServerUnderTest:
    """The connected target, as the suite found it."""

    session: TargetSession
    tools: dict[str, Tool]
    server: str | None = None
    keys: dict[str, VerifyKey] = field(default_factory=dict)
    keys_problem: str | None = None


@dataclass(frozen=True)
class Called:
    """A real call of an operation with its sample, and the journal object it returned."""

    sample: Sample
    raw: dict[str, Any]
    journal: JournalObject

    @property
    def token(self) -> str:
        """The compensation token (a failed check if there is none)."""
        return require(
            self.journal.compensation_token, "no_token", "the result carries no compensation token"
        )

    @property
    def resource(self) -> str:
        """``effect.resource``."""
        return require(self.journal.effect, "no_effect", "the result carries no effect").resource

    @property
    def version(self) -> str:
        """``effect.version``: the version the call left."""
        effect = require(self.journal.effect, "no_effect", "the result carries no effect")
        return require(effect.version, "no_version", "the effect names no version")

    @property
    def created(self) -> bool:
        """Whether the call created its resource (no version before it)."""
        return self.journal.effect is not None and self.journal.effect.before is None

    @property
    def undo_by(self) -> datetime:
        """``undo.undoBy``."""
        undo = require(self.journal.undo, "no_undo", "the result carries no undo")
        undo_by = require(undo.undo_by, "no_undo_by", "the result names no undoBy")
        try:
            return parse_wire_time(undo_by)
        except ValueError:
            raise CheckFailed(
                "bad_undo_by", f"undoBy {undo_by!r} is not UTC like 2026-11-07T14:02:10Z"
            ) from None


@dataclass
class CheckContext:
    """One check of one operation (or of the whole target when ``operation`` is None)."""

    target: ServerUnderTest
    operation: Operation | None = None

    @property
    def session(self) -> TargetSession:
        """The MCP session."""
        return self.target.session

    @property
    def op(self) -> Operation:
        """The operation under test."""
        assert self.operation is not None, "an operation check without an operation"
        return self.operation

    async def sample(self) -> Sample:
        """A fresh sample of the operation, or untestable."""
        offered = await self.session.samples(self.op.name)
        if offered.sample is None:
            raise NotTestable(f"the target offers no sample for {self.op.name}")
        return offered.sample

    async def call(self, sample: Sample | None = None) -> Called:
        """Call the operation with a fresh (or the given) sample; its journal object, validated."""
        sample = sample or await self.sample()
        reply = await self.session.call(self.op.name, dict(sample.arguments))
        expect(
            not reply.error,
            "call_failed",
            f"{self.op.name}{sample.arguments} failed: {reply.journal or reply.content}",
        )
        expect(isinstance(reply.journal, dict), "no_journal_object", f'the result has no _meta["{META_KEY}"]')
        try:
            journal = JournalObject.model_validate(reply.journal)
        except ValidationError as error:
            raise CheckFailed("invalid_journal_object", _first(error)) from None
        return Called(sample, reply.journal, journal)

    async def state(self, resource: str) -> StateAnswer:
        """The resource as stored now."""
        return await self.session.state(self.op.name, resource)

    def answer(self, reply: Reply, operation: str) -> UndoAnswer:
        """An undo answer of check or compensate, validated and verified with the published keys."""
        expect(
            isinstance(reply.journal, dict),
            "no_answer",
            f"{operation} returned no undo answer: {reply.content}",
        )
        try:
            answer = UndoAnswer.model_validate(reply.journal)
        except ValidationError as error:
            raise CheckFailed("invalid_answer", f"{operation}: {_first(error)}") from None
        expect(
            verify_answer(reply.journal, self.target.keys),
            "answer_not_signed",
            f"the {operation} answer's receipt does not verify with the published keys",
        )
        return answer


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(part) for part in first['loc']) or '(object)'}: {first['msg']}"
