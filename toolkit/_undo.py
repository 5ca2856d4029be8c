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
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_jsonable_python
from sqlalchemy import update
from sqlmodel import Session, col

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._effects import ResourceState, Tx, Undone
from hatp_journal.toolkit._undo_writes import Kept, found, not_restored, others_of
from hatp_journal.toolkit.errors import ErrorCode, JournalError, UndoFailed
from hatp_journal.toolkit.signing import VerifyKey, answer_payload, b64url_decode, compensate_payload, verify
from hatp_journal.toolkit.store import UndoAttempt, UndoBinding, UndoRecord, hash_token
from hatp_journal.toolkit.wire import (
    CompensateRequest,
    FieldChange,
    ResourceFound,
    UndoAnswer,
    UndoStatus,
    conflict_words,
)

if TYPE_CHECKING:
    from hatp_journal.toolkit._journal import Journal

Operation = Literal["check", "compensate"]

_UNREAD = "unreadResource"
"""Where a state reader's error carries which other resource of the call it could not read."""


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
                return self._sign(_unknown(self.journal.server, "check", token, now))
            if record.done_answer_json is not None:
                done = UndoAnswer.model_validate_json(record.done_answer_json)
                answer = self._answer(record, "check", "done", now, version_left=done.version_left)
                return self._sign(answer.model_copy(update={"message": "already compensated"}))
            if _expired(record, now):
                return self._sign(_expired_answer(self._answer(record, "check", "expired", now)))
            tx = Tx(session=session, now=now, server=self.journal.server, tool=record.tool)
            others = others_of(session, record.token_hash)
            try:
                state = self._state(record, tx)
                other_states = self._states(record, tx, others)
            except JournalError as error:
                session.rollback()
                return self._sign(_unreadable(self._answer(record, "check", "failed", now), error))
            if others:
                expected = [kept.version for kept in others]
                answer = _several(
                    self._answer(record, "check", "ok", now), record, state, others, expected, other_states
                )
            elif not _matches(record, record.version, state):
                answer = _conflict(self._answer(record, "check", "conflict", now), record, state)
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
                return self._sign(_unknown(self.journal.server, "compensate", request.token, now))
            refusal = _refusal(session.get(UndoBinding, token_hash), request, token_hash)
            if refusal is not None:
                answer = self._answer(record, "compensate", "refused", now)
                said = {"code": refusal[0], "message": refusal[1], "version_expected": request.if_version}
                return self._sign(answer.model_copy(update=said))
            if record.done_answer_json is not None:
                return UndoAnswer.model_validate_json(record.done_answer_json)
            request_key = _request_key(request)
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
        """Decide and (if allowed) run one compensate request inside ``session``."""
        base = self._answer(record, "compensate", "ok", now)
        base = base.model_copy(update={"version_expected": request.if_version, "override": request.override})
        if _expired(record, now):
            return self._sign(_expired_answer(base.model_copy(update={"status": "expired"}))), None
        tx = Tx(
            session=session,
            now=now,
            server=self.journal.server,
            tool=record.tool,
            override=request.override,
        )
        others = others_of(session, record.token_hash)
        expected = [(request.if_versions or {}).get(kept.resource, kept.version) for kept in others]
        try:
            state = self._state(record, tx)
            other_states = self._states(record, tx, others)
        except JournalError as error:
            return self._sign(_unreadable(base, error)), None
        base = base.model_copy(update={"version_found": state.version})
        if others:
            checked = _several(base, record, state, others, expected, other_states, request)
            if checked.status == "conflict":
                return self._sign(checked), None
        elif not _matches(record, request.if_version, state) and not _overridden(request, state):
            return self._sign(_conflict(base.model_copy(update={"status": "conflict"}), record, state)), None
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
            reason = error.message if isinstance(error, JournalError) else f"{type(error).__name__}: {error}"
            code = error.code if isinstance(error, JournalError) else ErrorCode.UNDO_FAILED
            status: UndoStatus = "unverified" if code is ErrorCode.UNDO_UNVERIFIED else "failed"
            # A compensation that fails halfway can still say what it saw (e.g. screenshots, protocol.md §6).
            evidence = error.data.get("evidence", ()) if isinstance(error, JournalError) else ()
            failed = base.model_copy(
                update={
                    "status": status,
                    "code": code,
                    "message": reason,
                    "evidence": [str(item) for item in evidence],
                }
            )
            return self._sign(failed), None
        if problem is not None:
            savepoint.rollback()
            tx.run_after_rollback()
            unverified = base.model_copy(
                update={
                    "status": "unverified",
                    "code": ErrorCode.UNDO_UNVERIFIED,
                    "message": problem,
                    "evidence": list(undone.evidence),
                }
            )
            return self._sign(unverified), None
        savepoint.commit()
        resources = None
        if others:
            resources = [
                ResourceFound(
                    resource=kept.resource,
                    status="ok",
                    version_expected=version,
                    version_found=before.version,
                    version_left=undone.version if place == 0 else after.version if after else None,
                )
                for place, (kept, version, before, after) in enumerate(
                    zip(
                        [_kept(record), *others],
                        [request.if_version, *expected],
                        [state, *other_states],
                        left,
                        strict=True,
                    )
                )
            ]
        done = base.model_copy(
            update={
                "status": "done",
                "resources": resources,
                "version_left": undone.version,
                "side_effects": list(undone.side_effects),
                "evidence": list(undone.evidence),
                "message": "compensated" + (" over a conflict by override" if request.override else ""),
            }
        )
        return self._sign(done), tx

    # -- helpers --------------------------------------------------------------------

    def _verify(self, record: UndoRecord, tx: Tx) -> str | None:
        """Why the resource does not read back as before the call; None if it does."""
        try:
            after = self._state(record, tx)
        except JournalError as error:
            # The undo ran but nobody can see its result: not reversed (protocol.md §6).
            return f"the undo ran but {record.resource} could not be read back: {error.message}"
        return _unverified(record, after)

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
                error.data[_UNREAD] = kept.resource
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


def _unknown(server: str, operation: Operation, token: str, now: datetime) -> UndoAnswer:
    return UndoAnswer(
        server=server,
        operation=operation,
        status="unknown_token",
        code=ErrorCode.UNDO_UNKNOWN_TOKEN,
        message="no undo is stored under this token on this server",
        token_digest=hash_token(token),
        at=wire_time(now),
    )


def _unreadable(answer: UndoAnswer, error: JournalError) -> UndoAnswer:
    """The state reader could not read the resource: nothing was run, nothing changed."""
    resource = error.data.get(_UNREAD, answer.resource)
    message = f"could not read {resource} to check it before undoing: {error.message}"
    return answer.model_copy(update={"status": "failed", "code": ErrorCode.UNDO_FAILED, "message": message})


def _expired(record: UndoRecord, now: datetime) -> bool:
    return wire_time(now) > record.undo_by


def _expired_answer(answer: UndoAnswer) -> UndoAnswer:
    return answer.model_copy(
        update={
            "code": ErrorCode.UNDO_EXPIRED,
            "message": f"the undo window closed at {answer.undo_by}",
        }
    )


def _matches(record: UndoRecord | Kept, if_version: str, state: ResourceState) -> bool:
    """Still at the expected version, or back at the same content (an ETag match)."""
    if state.version is not None and state.version == if_version:
        return True
    return (
        if_version == record.version
        and record.etag is not None
        and state.etag is not None
        and state.etag == record.etag
    )


def _conflict(answer: UndoAnswer, record: UndoRecord, state: ResourceState) -> UndoAnswer:
    left: Mapping[str, Any] = json.loads(record.fields_json) if record.fields_json else {}
    now_fields = to_jsonable_python(dict(state.fields))
    changes = [
        FieldChange(field=name, expected=left.get(name), now=now_fields.get(name))
        for name in sorted(set(left) | set(now_fields))
        if left.get(name) != now_fields.get(name)
    ]
    changed_by = state.who_changed() if state.exists else None
    if not state.exists:
        message = "the resource no longer exists"
    else:
        said = ", ".join(f"{c.field} is now {c.now}" for c in changes) or "it changed"
        message = f"{said} ({state.version})"
        if changed_by:
            message += f", changed by {changed_by}"
    return answer.model_copy(
        update={
            "code": ErrorCode.UNDO_CONFLICT,
            "message": message,
            "version_found": state.version,
            "changed_by": changed_by,
            "changes": changes,
        }
    )


def _kept(record: UndoRecord) -> Kept:
    """The record's own resource, as the others are kept."""
    fields: Mapping[str, Any] = json.loads(record.fields_json) if record.fields_json else {}
    return Kept(
        resource=record.resource,
        version=record.version,
        before=record.before,
        etag=record.etag,
        before_etag=record.before_etag,
        fields=fields,
    )


def _several(
    answer: UndoAnswer,
    record: UndoRecord,
    state: ResourceState,
    others: list[Kept],
    expected: list[str],
    other_states: list[ResourceState],
    request: CompensateRequest | None = None,
) -> UndoAnswer:
    """The answer for a call that wrote several resources: each one found, a conflict on any of them
    named in the message. An override covers the call's own resource as for one (``versionFound``);
    another resource, only at the version the request expects of it (``ifVersions``)."""
    if_version = request.if_version if request else record.version
    matched = _matches(record, if_version, state) or (request is not None and _overridden(request, state))
    each = [found(_kept(record), if_version, state, matched=matched)]
    for kept, version, now in zip(others, expected, other_states, strict=True):
        each.append(found(kept, version, now, matched=_matches(kept, version, now)))
    answer = answer.model_copy(update={"version_found": state.version, "resources": each})
    conflicts = [one for one in each if one.status == "conflict"]
    if not conflicts:
        return answer
    return answer.model_copy(
        update={
            "status": "conflict",
            "code": ErrorCode.UNDO_CONFLICT,
            "message": conflict_words(conflicts),
            "changed_by": conflicts[0].changed_by,
            "changes": conflicts[0].changes,
        }
    )


def _unverified(record: UndoRecord, after: ResourceState) -> str | None:
    """Why the state after the undo is not the state before the call, or None if it is."""
    if record.before is None:
        return None if not after.exists else "the created resource still exists after the undo"
    if record.before_etag is not None and after.etag != record.before_etag:
        return "after the undo the resource does not match its state before the call"
    return None


def _refusal(
    binding: UndoBinding | None, request: CompensateRequest, token_hash: str
) -> tuple[ErrorCode, str] | None:
    """Why this request may not compensate the token (code, message); None if it may."""
    if binding is None:
        if request.override is not None:
            return (
                ErrorCode.UNDO_OVERRIDE_REFUSED,
                "an override needs the signature of the Recorder the token was issued through, "
                "and this token was issued through none",
            )
        return None
    override = request.override.wire() if request.override else None
    payload = compensate_payload(
        token_hash, request.if_version, request.request_id, override, request.if_versions
    )
    try:
        key = VerifyKey.from_raw(b64url_decode(binding.public_key))
    except ValueError:
        return ErrorCode.UNDO_NOT_AUTHORIZED, "the Recorder key this token is bound to is unreadable"
    if request.proof is None or not verify(request.proof, payload, {key.kid: key}):
        return (
            ErrorCode.UNDO_NOT_AUTHORIZED,
            f"this token compensates only with a request signed by the Recorder it was issued through "
            f"({binding.kid})",
        )
    return None


def _overridden(request: CompensateRequest, state: ResourceState) -> bool:
    """Whether a (proven) override covers the resource as it is now: the version the person saw."""
    override = request.override
    if override is None:
        return False
    return override.version_found is None or override.version_found == state.version


def _request_key(request: CompensateRequest) -> str:
    override = request.override.wire() if request.override else None
    key: dict[str, Any] = {
        "ifVersion": request.if_version,
        "override": override,
        "requestId": request.request_id,
    }
    if request.if_versions is not None:  # only when sent: a one-resource request keeps its key
        key["ifVersions"] = request.if_versions
    return sha256_digest(key)
