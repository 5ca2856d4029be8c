"""The agent's calls in a Run Record, read as numbered steps an undo can be asked for (protocol.md §9).

Step N is the N-th ``call`` entry of the run: what reached a tool server, reads included. The
undo's own bookkeeping (plans, decisions, intents, outcomes, reversal records) is never a step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

from pydantic import BaseModel, ValidationError

from hatp_journal.recorder.changes.host_diff import same
from hatp_journal.recorder.changes.host_undo import (
    NOTHING_CHANGED,
    changed_nothing,
    host_journal,
    undoable,
)
from hatp_journal.recorder.changes.plan import undo_label
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.entry_bodies import CallBody, Unreadable, read_as, read_journal
from hatp_journal.recorder.record.kept_journal import KeptJournal, KeptUndo
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.wire import EffectChange, EffectInfo

StepKind = Literal["compensate", "none", "unknown", "read", "unresolved", "no-effect"]

T = TypeVar("T")


class _once(Generic[T]):
    """A property worked out on first use and kept in the instance: ``functools.cached_property``
    without its lock (Python 3.11 takes a lock on every first read; a 10k-step plan reads ~100k)."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self._compute = compute
        self._name = compute.__name__
        self.__doc__ = compute.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> _once[T]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any]) -> T: ...
    def __get__(self, instance: object | None, owner: type[Any]) -> T | _once[T]:
        if instance is None:
            return self
        value = self._compute(instance)
        instance.__dict__[self._name] = value  # kept: later reads find it before this descriptor
        return value


@dataclass(frozen=True)
class Written:
    """One resource a call wrote: the version it left and the one before it (None: created)."""

    resource: str
    version: str | None
    before: str | None


@dataclass(frozen=True)
class Step:
    """One forwarded call and what its journal object (if verified) says about undoing it.

    ``journal`` is that object read through :class:`KeptJournal` (the wire's members, docs/protocol.md),
    None when there is none to go by (not verified, or one that does not fit: the step is then
    ``unresolved``, its ``code`` the ``ReadCode`` and ``reason`` what did not fit). What it says is read
    once and kept (:class:`_once`): a plan asks each step many times.
    """

    number: int
    entry: Entry
    kind: StepKind
    reason: str | None = None
    journal: KeptJournal | None = None
    code: str | None = None

    @_once
    def id(self) -> str:
        """The entry id, ``eN``."""
        return self.entry.id

    @_once
    def call(self) -> CallBody:
        """The call as recorded (an unreadable one reads as a call to nothing)."""
        body = read_as(CallBody, self.entry)
        return body if isinstance(body, CallBody) else CallBody()

    @_once
    def server(self) -> str:
        return self.call.server

    @_once
    def tool(self) -> str:
        return self.call.tool

    @_once
    def host_undo(self) -> Any:
        """What the host keeps to undo the call itself (``host_undo.py``), as recorded."""
        return self.call.host_undo

    @_once
    def arguments(self) -> dict[str, Any]:
        arguments = self.call.arguments
        return arguments if isinstance(arguments, dict) else {}

    @_once
    def effect(self) -> EffectInfo | None:
        """What the server said the call changed (``effect``), if it said."""
        return self.journal.effect if self.journal is not None else None

    @_once
    def undo(self) -> KeptUndo | None:
        """The server's undo terms (``undo``), if it gave them."""
        return self.journal.undo if self.journal is not None else None

    @_once
    def summary(self) -> str:
        """The server's summary, or ``server.tool`` for a call without one. An ``unresolved`` step whose
        journal object does not fit is still named by its ``effect.summary``, if that is a string."""
        summary = self.effect.summary if self.effect is not None else None
        if summary is None and self.kind == "unresolved":
            summary = _said_summary(self.call.journal)
        return summary or f"{self.server}.{self.tool}"

    @_once
    def changes(self) -> list[EffectChange] | None:
        """The fields the call changed (``effect.changes``), if the server said."""
        return self.effect.changes if self.effect is not None else None

    @_once
    def undo_text(self) -> str:
        """What undoing the call does, for people (see :func:`undo_label`)."""
        return undo_label(self.summary, self.changes)

    @_once
    def resource(self) -> str | None:
        return self.effect.resource if self.effect is not None else None

    @_once
    def version(self) -> str | None:
        return self.effect.version if self.effect is not None else None

    @_once
    def before(self) -> str | None:
        """The resource's version right before the call (``effect.before``)."""
        return self.effect.before if self.effect is not None else None

    @_once
    def writes(self) -> list[Written]:
        """Every resource the call wrote with its versions: ``effect.resource`` first, then each of
        ``effect.also`` (a call that wrote several; the model names each resource once); empty when
        it names none."""
        found = [Written(self.resource, self.version, self.before)] if self.resource else []
        also = self.effect.also if self.effect is not None else None
        return found + [Written(write.resource, write.version, write.before) for write in also or []]

    def written(self, resource: str) -> Written | None:
        """What the call wrote of ``resource``, if it wrote it."""
        return next((write for write in self.writes if write.resource == resource), None)

    @_once
    def token_digest(self) -> str | None:
        """The digest of the call's compensation token (the token itself stays in the Recorder's
        token store, never in the record)."""
        return self.journal.compensation_token_digest if self.journal is not None else None

    @_once
    def by_host(self) -> bool:
        """Whether the Recorder itself undoes the call (host-declared compensation, host_undo.py)."""
        return self.kind == "compensate" and undoable(self.host_undo)

    @_once
    def undo_by(self) -> str | None:
        """The undo window's end (``undo.undoBy``, a wire time: the model reads no other)."""
        return self.undo.undo_by if self.undo is not None else None

    @_once
    def side_effects(self) -> list[str]:
        return list(self.undo.side_effects) if self.undo is not None else []

    @_once
    def remedy(self) -> str | None:
        """What the server says to do instead, for a call it can't undo (``remedy``)."""
        return self.journal.remedy if self.journal is not None else None

    @_once
    def uses(self) -> list[str]:
        """Resources the server declared the call relied on (``effect.uses``)."""
        return [use.resource for use in self.effect.uses] if self.effect is not None else []


NO_CHANGE_CODES = frozenset({ErrorCode.TOOL_FAILED, ErrorCode.INVALID_ARGUMENTS})
"""Error codes with which a journal-aware tool says it refused a call and changed nothing."""


def steps_of(entries: list[Entry]) -> list[Step]:
    """Every ``call`` entry of a run as a numbered step, classified for undo."""
    steps: list[Step] = []
    for entry in entries:
        if entry.kind == "call":
            steps.append(_classify(len(steps) + 1, entry))
    return steps


class Chains:
    """The versioned writes of each resource among ``steps``, oldest first: a run's own writes to
    one resource (create, edit, delete) form a chain whose undo runs newest first, each undo
    leaving the version the one before it expects. A call that wrote several resources
    (``effect.also``) is in the chain of each.

    Built once in one pass; every question is then a lookup (no rescans of the steps). Each takes
    the resource to ask about, the step's own ``effect.resource`` unless named.
    """

    def __init__(self, steps: Iterable[Step]) -> None:
        self._chain: dict[str, list[Step]] = {}
        self._position: dict[tuple[str, str], int] = {}
        self._gap: dict[tuple[str, str], Step | None] = {}
        for step in sorted(steps, key=lambda s: s.number):
            # Only a write that says which version it started from or left changes the resource
            # in a way the next one follows on from (publishing a key names it, changes nothing).
            for write in step.writes:
                if write.before is not None or write.version is not None:
                    chain = self._chain.setdefault(write.resource, [])
                    self._position[(write.resource, step.id)] = len(chain)
                    chain.append(step)
        for resource, chain in self._chain.items():
            gap: Step | None = None  # the oldest later write that did not start where the one before left
            for position in reversed(range(len(chain))):
                self._gap[(resource, chain[position].id)] = gap
                if position and not _follows(chain[position], chain[position - 1], resource):
                    gap = chain[position]

    def next(self, step: Step, resource: str | None = None) -> Step | None:
        """The next write of the resource after ``step``, if any."""
        chain, position = self._place(step, resource)
        return chain[position + 1] if position + 1 < len(chain) else None

    def newest(self, step: Step, resource: str | None = None) -> Step:
        """The latest write of the resource (``step`` itself if nothing wrote it later)."""
        chain, _ = self._place(step, resource)
        return chain[-1] if chain else step

    def gap(self, step: Step, resource: str | None = None) -> Step | None:
        """The first later write that did not start from the version the write before it left
        (someone else wrote in between), or None when every later write follows on."""
        return self._gap.get((resource or step.resource or "", step.id))

    def _place(self, step: Step, resource: str | None) -> tuple[list[Step], int]:
        key = (resource or step.resource or "", step.id)
        if key not in self._position:
            return [], 0
        return self._chain[key[0]], self._position[key]


def _follows(later: Step, earlier: Step, resource: str) -> bool:
    """Whether ``later`` started from the version ``earlier`` left: the same fingerprint, or, for
    two calls the host undoes by the same state read, the same elements in another order (an undo
    the run ran in between puts what it creates again at the end)."""
    if _before(later, resource) == _version(earlier, resource):
        return True
    if not (later.by_host and earlier.by_host):
        return False
    found, left = later.host_undo, earlier.host_undo
    return (
        found.get("state") == left.get("state")
        and found.get("restored") == found.get("before")  # its snapshot is what the state read gives
        and "snapshot" in found
        and "afterState" in left
        and same(found["snapshot"], left["afterState"])
    )


def _version(step: Step, resource: str) -> str | None:
    written = step.written(resource)
    return written.version if written else None


def _before(step: Step, resource: str) -> str | None:
    written = step.written(resource)
    return written.before if written else None


def _classify(number: int, entry: Entry) -> Step:
    body = read_as(CallBody, entry)
    if isinstance(body, Unreadable):
        return Step(number, entry, "unresolved", body.text(), code=body.code)
    step = _classified(number, entry, body)
    # What the properties would read again, kept as read: the members themselves, not the model
    # (a run of 10k steps keeping 10k models makes every garbage collection walk them).
    step.__dict__.update(server=body.server, tool=body.tool, host_undo=body.host_undo)
    step.__dict__["arguments"] = body.arguments if isinstance(body.arguments, dict) else {}
    return step


def _classified(number: int, entry: Entry, body: CallBody) -> Step:
    journal = body.journal
    status = body.intake.status if body.intake is not None else None
    outcome = body.outcome.status if body.outcome is not None else None
    if outcome == "failed":
        # A call that hung or crashed its server may or may not have had an effect.
        why = (body.outcome.error if body.outcome else None) or "the call failed"
        return Step(number, entry, "unresolved", f"the call failed, its effect is unknown: {why}")
    host = body.host_undo
    if isinstance(host, dict) and outcome == "ok":  # the host, not the server, undoes it (or says why not)
        if undoable(host):
            if changed_nothing(host):
                return Step(number, entry, "no-effect", NOTHING_CHANGED)
            kept = read_journal(host_journal(host))
            if isinstance(kept, Unreadable):  # the host's own member, yet odd as stored: go by nothing
                return Step(number, entry, "unresolved", kept.text(), code=kept.code)
            return Step(number, entry, "compensate", None, kept)
        return Step(number, entry, "unknown", str(host.get("failed", "the host can't undo it")))
    if (
        outcome == "ok"
        and host_class(body) == "R0"
        and (body.intake is None or body.intake.kind != "compensate")
    ):
        # The host classed it a read (registry, trusted declaration or hint): nothing to undo, and
        # nothing a later step can have relied on it for.
        return Step(number, entry, "read", None, _readable(journal) if status == "verified" else None)
    if status == "error":
        code = _error_code(journal)
        if code in NO_CHANGE_CODES:
            return Step(number, entry, "no-effect", f"the tool refused the call and changed nothing ({code})")
        reason = body.intake.reason if body.intake else None
        why = f"the tool failed, whether it changed anything is unknown: {reason or code}"
        return Step(number, entry, "unresolved", why)
    if status == "unresolved":
        reason = body.intake.reason if body.intake else None
        return Step(number, entry, "unresolved", reason or "intake failed", _readable(journal))
    if outcome == "error" and body.declared not in (None, "unknown"):
        # A journal-aware tool that answered an error made no change (its transaction rolled back).
        return Step(number, entry, "no-effect", "the tool answered an error and changed nothing")
    verified: KeptJournal | None = None
    if status == "verified":
        # Its server signed it, yet it may not fit (an undoBy that is no time): unresolved, named.
        kept = read_journal(journal)
        if isinstance(kept, Unreadable):
            return Step(number, entry, "unresolved", kept.text(), code=kept.code)
        verified = kept
    kind = body.intake.kind if body.intake is not None else None
    if kind == "compensate":
        return Step(number, entry, "compensate", None, verified)
    if kind == "read":
        return Step(number, entry, "read", None, verified)
    if kind == "none":
        reason = (verified.reason if verified is not None else None) or "declared irreversible by the server"
        return Step(number, entry, "none", reason, verified)
    return Step(number, entry, "unknown", "the server does not say how to undo it", verified)


def host_class(body: CallBody) -> str | None:
    """The reversibility class the host gave the call when it decided on it (``decision.reversibility``)."""
    verdict = body.decision.reversibility if body.decision is not None else None
    return verdict.rclass if verdict is not None else None


def _readable(journal: Any) -> KeptJournal | None:
    """The journal object through :class:`KeptJournal`, or None when it does not fit (a step that
    goes by nothing the server said)."""
    kept = read_journal(journal)
    return None if isinstance(kept, Unreadable) else kept


class _Summary(BaseModel):
    summary: str


class _SaidSummary(BaseModel):
    """A journal object's ``effect.summary`` read alone, for one that does not fit as a whole."""

    effect: _Summary


def _said_summary(journal: Any) -> str | None:
    try:
        return _SaidSummary.model_validate(journal).effect.summary
    except ValidationError:
        return None


class _ErrorCode(BaseModel):
    code: str


class _ErrorJournal(BaseModel):
    """What an error answer's intake keeps: the tool's error, its stable ``code`` read alone."""

    error: _ErrorCode


def _error_code(journal: Any) -> str:
    """The code of the tool's error (``error.code``), or "" when the stored value has none."""
    try:
        return _ErrorJournal.model_validate(journal).error.code
    except ValidationError:
        return ""
