"""What server authors' functions receive and return.

A journaled tool returns an :class:`Effect` (whose summary :func:`summarize` writes as a
:class:`Summary`); a state reader returns a :class:`ResourceState`; a compensation returns an
:class:`Undone`. Each function gets a :class:`Tx`: the store session of the current transaction,
in which the toolkit also writes its undo records, so an effect and its undo commit together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session

from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._after_commit import ActionSpec, log_failed_closure, new_row
from hatp_journal.toolkit.errors import DeclarationError, JournalError
from hatp_journal.toolkit.wire import EffectChange, Money, Override, Use

SPEC_ATTR = "__hatp_journal__"
"""Where a decorator keeps the declaration it attached to a function."""


@dataclass
class Tx:
    """The transaction a journaled function runs in.

    ``session`` is a SQLModel session on the journal's engine; the toolkit
    commits it (with its own records) after the function returns, or rolls it
    back if the function raises. Work that must not happen unless the commit
    does (sending mail, calling another system) goes through :meth:`after_commit`;
    what must be undone if the work is dropped (an open connection) through :meth:`after_rollback`.
    """

    session: Session
    now: datetime
    server: str
    tool: str = ""
    override: Override | None = None
    _after_commit: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _after_rollback: list[Callable[[], None]] = field(default_factory=list, repr=False)
    recorded_actions: list[str] = field(default_factory=list, repr=False)
    """Ids of the durable after-commit actions this transaction recorded (run by the journal)."""

    def after_commit(
        self, action: Callable[..., None], data: BaseModel | Mapping[str, Any] | None = None
    ) -> None:
        """Run ``action`` once the transaction has committed (never if it rolls back).

        An action decorated :func:`~hatp_journal.toolkit.after_commit_action` is recorded in this
        transaction with ``data`` (plain data: a pydantic model or a JSON mapping, never a row of
        the session) and called with it after the commit, retried with backoff until it succeeds
        or a person drops it (:mod:`hatp_journal.toolkit._after_commit`). A plain callable runs
        once, after the commit in this process; if it raises, the error is logged and lost.
        """
        spec = getattr(action, SPEC_ATTR, None)
        if isinstance(spec, ActionSpec):
            if data is None:
                raise DeclarationError(
                    f"tx.after_commit({spec.name}, data): a recorded action needs the plain data it runs with"
                )
            row = new_row(spec, data, server=self.server, tool=self.tool, now=wire_time(self.now))
            self.session.add(row)
            self.recorded_actions.append(row.id)
            return
        if data is not None:
            raise DeclarationError(
                f"tx.after_commit({getattr(action, '__name__', action)!r}, data): decorate the action with "
                "@after_commit_action to have it recorded and retried with its data"
            )
        self._after_commit.append(action)

    def after_rollback(self, action: Callable[[], None]) -> None:
        """Run ``action`` if the work is dropped instead: the function raised, the commit failed,
        or (in a compensation) the toolkit rolled the undo back. Never after a commit."""
        self._after_rollback.append(action)

    def run_after_commit(self) -> list[str]:
        """The commit stands: run the ``after_commit`` actions in order and forget the others.

        Returns the errors of the actions that raised.
        """
        actions, self._after_commit, self._after_rollback = self._after_commit, [], []
        errors = _run_all(actions)
        for action, error in errors:
            log_failed_closure(self.server, self.tool, action, error)
        return [error for _, error in errors]

    def run_after_rollback(self) -> list[str]:
        """The work was dropped: run the ``after_rollback`` actions in order and forget the others."""
        actions, self._after_commit, self._after_rollback = self._after_rollback, [], []
        self.recorded_actions = []  # rolled back with the transaction: nothing to run
        return [error for _, error in _run_all(actions)]


def _run_all(actions: list[Callable[[], None]]) -> list[tuple[Callable[[], None], str]]:
    errors: list[tuple[Callable[[], None], str]] = []
    for action in actions:
        try:
            action()
        except Exception as error:  # noqa: BLE001 - author code; the commit or rollback already stands
            errors.append((action, f"{type(error).__name__}: {error}"))
    return errors


class Summary(str):
    """A summary that knows the field changes it shows (what :func:`summarize` returns).

    It is the summary text everywhere; the toolkit also sends its ``changes`` as
    ``effect.changes``, from which the Recorder writes what undoing the call does.
    """

    changes: tuple[EffectChange, ...]

    def __new__(cls, text: str, changes: Sequence[EffectChange]) -> Summary:
        summary = super().__new__(cls, text)
        summary.changes = tuple(changes)
        return summary


@dataclass(frozen=True)
class Write:
    """Another resource a journaled call wrote, besides :attr:`Effect.resource` (``Effect.also``).

    The same parts as the effect's own resource: the ``version`` it left (required for an undo),
    the version ``before`` the call (None: the call created it), the content tags and the field
    values it left. The compensation's state reader is asked for it by this ``resource``; the undo
    runs only if every resource of the call is still as the call left it.
    """

    resource: str
    version: str | None
    before: str | None = None
    fields: Mapping[str, Any] | None = None
    etag: str | None = None
    before_etag: str | None = None


@dataclass(frozen=True)
class Effect:
    """What a journaled call did, read from the server's own store (protocol.md §3).

    ``summary`` must be written from the stored old and new values, never from
    the agent's arguments. ``undo`` is the compensation payload that the toolkit
    stores behind the token. ``etag``/``before_etag`` are content tags (see
    :func:`content_etag`) that let the toolkit recognise a resource brought back
    to the same content and verify a compensation afterwards. ``changes`` lists the fields the
    call changed (see :func:`field_changes`) when the summary is not a :class:`Summary` that
    knows them already; leave it out when the undo does not put those values back (a refund
    leaves an order "refunded", not as it was): the Recorder shows the undo as them reversed.
    ``also`` lists every other resource the call wrote (a :class:`Write` each, with its version),
    so that the undo is checked against all of them and a later write of any of them by the same
    run is a dependency, not a conflict.
    """

    result: Any
    summary: str
    resource: str
    version: str | None = None
    before: str | None = None
    uses: Sequence[Use] = ()
    undo: BaseModel | Mapping[str, Any] | None = None
    fields: Mapping[str, Any] | None = None
    etag: str | None = None
    before_etag: str | None = None
    amount: Money | None = None
    changes: Sequence[EffectChange] | None = None
    also: Sequence[Write] = ()

    def field_changes(self) -> list[EffectChange] | None:
        """``effect.changes`` as sent: those given, else those the summary shows, else none."""
        if self.changes is not None:
            return list(self.changes)
        if isinstance(self.summary, Summary):
            return list(self.summary.changes)
        return None


@dataclass(frozen=True)
class ResourceState:
    """A resource as the store holds it now. ``version=None`` means it does not exist.

    ``changed_by`` may be a function of no arguments: the toolkit calls it only to report a
    conflict, for servers where finding out costs something (a UI server loads another page).
    """

    version: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)
    etag: str | None = None
    changed_by: str | Callable[[], str | None] | None = None

    @property
    def exists(self) -> bool:
        """Whether the resource exists."""
        return self.version is not None

    def who_changed(self) -> str | None:
        """Who changed it last, asking ``changed_by`` now if it is a function (None if that fails)."""
        if not callable(self.changed_by):
            return self.changed_by
        try:
            return self.changed_by()
        except JournalError:
            return None  # who changed it is a detail of an answer; the answer stands without it


@dataclass(frozen=True)
class Undone:
    """What a compensation actually did: the version it left and the side effects that occurred."""

    version: str | None
    side_effects: Sequence[str] = ()
    evidence: Sequence[str] = ()
