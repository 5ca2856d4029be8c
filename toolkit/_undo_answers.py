"""How each answer of ``check`` and ``compensate`` reads (toolkit/_undo.py decides which one is due):
unknown token, expired, unreadable, conflict (on one resource or on any of several), refused, done."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal._shared.clock import wire_time
from hatp_journal.toolkit._effects import ResourceState, Undone
from hatp_journal.toolkit._undo_writes import Kept, found
from hatp_journal.toolkit.errors import ErrorCode, JournalError
from hatp_journal.toolkit.signing import VerifyKey, b64url_decode, compensate_payload, verify
from hatp_journal.toolkit.store import UndoBinding, UndoRecord, hash_token
from hatp_journal.toolkit.wire import (
    CompensateRequest,
    FieldChange,
    ResourceFound,
    UndoAnswer,
    UndoStatus,
    conflict_words,
)

Operation = Literal["check", "compensate"]

UNREAD = "unreadResource"
"""Where a state reader's error carries which other resource of the call it could not read."""


def unknown_token_answer(server: str, operation: Operation, token: str, now: datetime) -> UndoAnswer:
    return UndoAnswer(
        server=server,
        operation=operation,
        status="unknown_token",
        code=ErrorCode.UNDO_UNKNOWN_TOKEN,
        message="no undo is stored under this token on this server",
        token_digest=hash_token(token),
        at=wire_time(now),
    )


def unreadable_answer(answer: UndoAnswer, error: JournalError) -> UndoAnswer:
    """The state reader could not read the resource: nothing was run, nothing changed."""
    resource = error.data.get(UNREAD, answer.resource)
    message = f"could not read {resource} to check it before undoing: {error.message}"
    return answer.model_copy(update={"status": "failed", "code": ErrorCode.UNDO_FAILED, "message": message})


def is_expired(record: UndoRecord, now: datetime) -> bool:
    return wire_time(now) > record.undo_by


def expired_answer(answer: UndoAnswer) -> UndoAnswer:
    return answer.model_copy(
        update={
            "code": ErrorCode.UNDO_EXPIRED,
            "message": f"the undo window closed at {answer.undo_by}",
        }
    )


def still_matches(record: UndoRecord | Kept, if_version: str, state: ResourceState) -> bool:
    """Still at the expected version, or back at the same content (an ETag match)."""
    if state.version is not None and state.version == if_version:
        return True
    return (
        if_version == record.version
        and record.etag is not None
        and state.etag is not None
        and state.etag == record.etag
    )


def conflict_answer(answer: UndoAnswer, record: UndoRecord, state: ResourceState) -> UndoAnswer:
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


def kept_of(record: UndoRecord) -> Kept:
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


def several_answer(
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
    matched = still_matches(record, if_version, state) or (request is not None and overridden(request, state))
    each = [found(kept_of(record), if_version, state, matched=matched)]
    for kept, version, now in zip(others, expected, other_states, strict=True):
        each.append(found(kept, version, now, matched=still_matches(kept, version, now)))
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


def unverified_reason(record: UndoRecord, after: ResourceState) -> str | None:
    """Why the state after the undo is not the state before the call, or None if it is."""
    if record.before is None:
        return None if not after.exists else "the created resource still exists after the undo"
    if record.before_etag is not None and after.etag != record.before_etag:
        return "after the undo the resource does not match its state before the call"
    return None


def why_refused(
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


def overridden(request: CompensateRequest, state: ResourceState) -> bool:
    """Whether a (proven) override covers the resource as it is now: the version the person saw."""
    override = request.override
    if override is None:
        return False
    return override.version_found is None or override.version_found == state.version


def request_key_of(request: CompensateRequest) -> str:
    override = request.override.wire() if request.override else None
    key: dict[str, Any] = {
        "ifVersion": request.if_version,
        "override": override,
        "requestId": request.request_id,
    }
    if request.if_versions is not None:  # only when sent: a one-resource request keeps its key
        key["ifVersions"] = request.if_versions
    return sha256_digest(key)


def failed_answer(base: UndoAnswer, error: Exception) -> UndoAnswer:
    """The compensation raised: ``UNDO_UNVERIFIED`` if it said so, else ``UNDO_FAILED``, with what it
    saw if it got that far (e.g. screenshots, protocol.md §6)."""
    reason = error.message if isinstance(error, JournalError) else f"{type(error).__name__}: {error}"
    code = error.code if isinstance(error, JournalError) else ErrorCode.UNDO_FAILED
    status: UndoStatus = "unverified" if code is ErrorCode.UNDO_UNVERIFIED else "failed"
    evidence = error.data.get("evidence", ()) if isinstance(error, JournalError) else ()
    update = {"status": status, "code": code, "message": reason, "evidence": [str(item) for item in evidence]}
    return base.model_copy(update=update)


def done_answer(
    base: UndoAnswer,
    record: UndoRecord,
    request: CompensateRequest,
    undone: Undone,
    before: list[ResourceState],
    others: list[Kept],
    expected: list[str],
    left: list[ResourceState | None],
) -> UndoAnswer:
    """The answer of a compensation that ran and read back as before the call; for a call that wrote
    several resources, each one with the version it was found at and the version the undo left."""
    resources = None
    if others:
        resources = [
            ResourceFound(
                resource=kept.resource,
                status="ok",
                version_expected=version,
                version_found=found_state.version,
                version_left=undone.version if place == 0 else after.version if after else None,
            )
            for place, (kept, version, found_state, after) in enumerate(
                zip([kept_of(record), *others], [request.if_version, *expected], before, left, strict=True)
            )
        ]
    message = "compensated" + (" over a conflict by override" if request.override else "")
    update = {
        "status": "done",
        "resources": resources,
        "version_left": undone.version,
        "side_effects": list(undone.side_effects),
        "evidence": list(undone.evidence),
        "message": message,
    }
    return base.model_copy(update=update)
