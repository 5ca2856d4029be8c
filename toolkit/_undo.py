"""check and compensate (protocol.md §4): the rules that make undo safe under retries and crashes.

- The token is looked up before ``ifVersion`` is checked.
- Every compensate answer (a conflict too) is stored in the same transaction as
  the undo's effect, so a retry of the same request gets the same answer back.
- A compensation that raises, or whose result can't be verified, is rolled back.
- A state reader that raises a :class:`JournalError` (the resource can't be read now) gives
  ``UNDO_FAILED`` before the compensation runs, ``UNDO_UNVERIFIED`` after it ran.
- A token issued through a Recorder compensates only with that Recorder's signature over the
  request (``UNDO_NOT_AUTHORIZED``); an override needs such a signature too
  (``UNDO_OVERRIDE_REFUSED`` for a token bound to no Recorder) and overwrites only the version
  the person saw. Refusals change nothing and are not stored, so a forged request can't take
  the place of the Recorder's later genuine one.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlmodel import Session, col

from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._effects import ResourceState, Tx, Undone
from hatp_journal.toolkit._undo_answers import (
    UNREAD,
    Operation,
    conflict_answer,
    done_answer,
    expired_answer,
    failed_answer,
    is_expired,
    overridden,
    request_key_of,
    several_answer,
    still_matches,
    unknown_token_answer,
    unreadable_answer,
    unverified_reason,
    why_refused,
)
from hatp_journal.toolkit._undo_writes import Kept, not_restored, others_of
from hatp_journal.toolkit.errors import ErrorCode, JournalError, UndoFailed
from hatp_journal.toolkit.signing import answer_payload
from hatp_journal.toolkit.store import UndoAttempt, UndoBinding, UndoRecord, hash_token
from hatp_journal.toolkit.wire import (
    CompensateRequest,
    UndoAnswer,
    UndoStatus,
)

if TYPE_CHECKING:
    from hatp_journal.toolkit._journal import Journal


class UndoEngine:
    """Answers ``check`` and ``compensate`` for one :class:`Journal`."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    # -- check ------------------------------------------------------------------

    def check(self, token: str) -> UndoAnswer:
        """A dry run: the answer ``compensate`` would give now, with nothing changed."""
        now = self.journal.now()
        with Session(self.journal.engine) as session:
            record = session.get(UndoRecord, hash_token(token))
            if record is None:
                return self._sign(unknown_token_answer(self.journal.server, "check", token, now))
            if record.done_answer_json is not None:
                done = UndoAnswer.model_validate_json(record.done_answer_json)
                answer = self._answer(record, "check", "done", now, version_left=done.version_left)
                return self._sign(answer.model_copy(update={"message": "already compensated"}))
            if is_expired(record, now):
                return self._sign(expired_answer(self._answer(record, "check", "expired", now)))
            tx = Tx(session=session, now=now, server=self.journal.server, tool=record.tool)
            others = others_of(session, record.token_hash)
            try:
                state = self._state(record, tx)
                other_states = self._states(record, tx, others)
            except JournalError as error:
                session.rollback()
                return self._sign(unreadable_answer(self._answer(record, "check", "failed", now), error))
            if others:
                expected = [kept.version for kept in others]
                answer = several_answer(
                    self._answer(record, "check", "ok", now), record, state, others, expected, other_states
                )
            elif not still_matches(record, record.version, state):
                answer = conflict_answer(self._answer(record, "check", "conflict", now), record, state)
            else:
                answer = self._answer(record, "check", "ok", now, version_found=state.version)
            session.rollback()  # a dry run: whatever the state reader touched is dropped
        return self._sign(answer)

    # -- compensate ---------------------------------------------------------------

    def compensate(self, request: CompensateRequest) -> UndoAnswer:
        """Run the stored undo once, only over the version the caller expects."""
        now = self.journal.now()
        token_hash = hash_token(request.token)
        with Session(self.journal.engine) as session:
            # Compensations of one token take turns (SQLite: the BEGIN IMMEDIATE write lock;
            # PostgreSQL: this row lock), so a replica sees another's finished answer, not a race.
            record = session.get(UndoRecord, token_hash, with_for_update=True)
            if record is None:
                return self._sign(unknown_token_answer(self.journal.server, "compensate", request.token, now))
            refusal = why_refused(session.get(UndoBinding, token_hash), request, token_hash)
            if refusal is not None:
                answer = self._answer(record, "compensate", "refused", now)
                said = {"code": refusal[0], "message": refusal[1], "version_expected": request.if_version}
                return self._sign(answer.model_copy(update=said))
            if record.done_answer_json is not None:
                return UndoAnswer.model_validate_json(record.done_answer_json)
            request_key = request_key_of(request)
            attempt = session.get(UndoAttempt, (token_hash, request_key))
            if attempt is not None:
                return UndoAnswer.model_validate_json(attempt.answer_json)
            answer, done_tx = self._attempt(session, record, request, now)
            answer_json = answer.model_dump_json(by_alias=True, exclude_none=True)
            try:
                if answer.status == "done":
                    # Conditional write: if another process finished first, we lose and roll back.
                    claimed = session.execute(
                        update(UndoRecord)
                        .where(col(UndoRecord.token_hash) == token_hash)
                        .where(col(UndoRecord.done_answer_json).is_(None))
                        .values(done_answer_json=answer_json)
                    )
                    if claimed.rowcount != 1:  # type: ignore[attr-defined]
                        session.rollback()
                        if done_tx is not None:
                            done_tx.run_after_rollback()
                        return self.compensate(request)
                session.add(
                    UndoAttempt(
                        token_hash=token_hash,
                        request_key=request_key,
                        answer_json=answer_json,
                        at=answer.at,
                    )
                )
                session.commit()
            except BaseException:
                session.rollback()
                if done_tx is not None:
                    done_tx.run_after_rollback()
                raise
        if done_tx is not None:
            self.journal.after_commit(done_tx)
        return answer

    def _attempt(
        self, session: Session, record: UndoRecord, request: CompensateRequest, now: datetime
    ) -> tuple[UndoAnswer, Tx | None]:
        """Decide and (if allowed) run one compensate request inside ``session``: the done answer
        with the transaction whose after-commit work is due, or the answer that says why not."""
        base = self._answer(record, "compensate", "ok", now)
        base = base.model_copy(update={"version_expected": request.if_version, "override": request.override})
        if is_expired(record, now):
            return self._sign(expired_answer(base.model_copy(update={"status": "expired"}))), None
        tx = Tx(
            session=session, now=now, server=self.journal.server, tool=record.tool, override=request.override
        )
        others = others_of(session, record.token_hash)
        expected = [(request.if_versions or {}).get(kept.resource, kept.version) for kept in others]
        try:
            state = self._state(record, tx)
            other_states = self._states(record, tx, others)
        except JournalError as error:
            return self._sign(unreadable_answer(base, error)), None
        base = base.model_copy(update={"version_found": state.version})
        if others:
            checked = several_answer(base, record, state, others, expected, other_states, request)
            if checked.status == "conflict":
                return self._sign(checked), None
        elif not still_matches(record, request.if_version, state) and not overridden(request, state):
            return self._sign(
                conflict_answer(base.model_copy(update={"status": "conflict"}), record, state)
            ), None
        ran = self._run(session, record, request, tx, others, base)
        if isinstance(ran, UndoAnswer):
            return self._sign(ran), None
        undone, left = ran
        done = done_answer(base, record, request, undone, [state, *other_states], others, expected, left)
        return self._sign(done), tx

    def _run(
        self,
        session: Session,
        record: UndoRecord,
        request: CompensateRequest,
        tx: Tx,
        others: list[Kept],
        base: UndoAnswer,
    ) -> tuple[Undone, list[ResourceState | None]] | UndoAnswer:
        """Run the compensation in a savepoint and read its result back: what it undid and how each
        other resource reads now, or (everything rolled back) the failed or unverified answer."""
        compensation = self.journal.compensations[record.tool]
        payload: Any = json.loads(record.payload_json)
        if compensation.payload_type is not None:
            payload = compensation.payload_type.model_validate(payload)
        savepoint = session.begin_nested()
        try:
            kwargs = {compensation.tx_param: tx} if compensation.tx_param else {}
            undone = compensation.function(payload, **kwargs)
            if not isinstance(undone, Undone):
                raise TypeError(
                    f"compensation for {record.tool} returned {type(undone).__name__}, not Undone"
                )
            session.flush()
            problem = None if request.override else self._verify(record, tx)
            if problem is not None and others:
                problem = f"{record.resource}: {problem}"
            left: list[ResourceState | None] = [None]
            if problem is None and others:
                problem, left = self._verify_others(record, others, tx, checked=not request.override)
        except Exception as error:  # noqa: BLE001 - author code: any failure is UNDO_FAILED
            savepoint.rollback()
            tx.run_after_rollback()
            return failed_answer(base, error)
        if problem is not None:
            savepoint.rollback()
            tx.run_after_rollback()
            update = {"status": "unverified", "code": ErrorCode.UNDO_UNVERIFIED, "message": problem}
            return base.model_copy(update={**update, "evidence": list(undone.evidence)})
        savepoint.commit()
        return undone, left

    # -- helpers --------------------------------------------------------------------

    def _verify(self, record: UndoRecord, tx: Tx) -> str | None:
        """Why the resource does not read back as before the call; None if it does."""
        try:
            after = self._state(record, tx)
        except JournalError as error:
            # The undo ran but nobody can see its result: not reversed (protocol.md §6).
            return f"the undo ran but {record.resource} could not be read back: {error.message}"
        return unverified_reason(record, after)

    def _verify_others(
        self, record: UndoRecord, others: list[Kept], tx: Tx, *, checked: bool
    ) -> tuple[str | None, list[ResourceState | None]]:
        """For a call that wrote several resources: why another one does not read back as before the
        call (None if each does), and how each resource reads now (None: the record's own, or
        unread). Unchecked (an override), they are only read, for the versions the undo left."""
        left: list[ResourceState | None] = [None]
        for kept in others:
            try:
                after = self._state(record, tx, kept.resource)
            except JournalError as error:
                if checked:
                    return f"the undo ran but {kept.resource} could not be read back: {error.message}", left
                left.append(None)
                continue
            problem = not_restored(kept, after) if checked else None
            if problem is not None:
                return problem, left
            left.append(after)
        return None, left

    def _states(self, record: UndoRecord, tx: Tx, others: list[Kept]) -> list[ResourceState]:
        """The other resources of the call as stored now; a JournalError names the one unread."""
        states = []
        for kept in others:
            try:
                states.append(self._state(record, tx, kept.resource))
            except JournalError as error:
                error.data[UNREAD] = kept.resource
                raise
        return states

    def _state(self, record: UndoRecord, tx: Tx, resource: str | None = None) -> ResourceState:
        """The state reader's answer for ``resource`` (the record's own one unless named)."""
        compensation = self.journal.compensations[record.tool]
        try:
            state = compensation.state(resource or record.resource, tx)
        except JournalError:
            raise
        except Exception as error:  # author code: a reader that crashes is UNDO_FAILED
            raise UndoFailed(f"{type(error).__name__}: {error}") from error
        if not isinstance(state, ResourceState):
            raise UndoFailed(f"state reader for {record.tool} returned {type(state).__name__}")
        return state

    def _answer(
        self,
        record: UndoRecord,
        operation: Operation,
        status: UndoStatus,
        now: datetime,
        **extra: Any,
    ) -> UndoAnswer:
        return UndoAnswer(
            server=self.journal.server,
            operation=operation,
            status=status,
            token_digest=record.token_hash,
            tool=record.tool,
            resource=record.resource,
            undo_by=record.undo_by,
            version_expected=record.version,
            side_effects=json.loads(record.side_effects_json) if operation == "check" else [],
            at=wire_time(now),
            **extra,
        )

    def _sign(self, answer: UndoAnswer) -> UndoAnswer:
        receipt = self.journal.key.sign(answer_payload(answer.wire()), answer.at)
        return answer.model_copy(update={"receipt": receipt})
