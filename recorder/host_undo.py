"""Host-declared compensation: the Recorder undoes calls of a server that knows nothing of undo.

The registry gives a tool a ``snapshot`` read, a ``state`` read and an ``inverse`` call
(:mod:`hatp_journal.recorder.policy.registry_compensation`). Around the call the Recorder takes the
snapshot (a snapshot that fails or is too large makes the call ask: it never runs unprotected),
then reads the state the call left and journals all of it in the call entry's ``hostUndo`` member,
signed by the Recorder: the host, not the server, vouches for what undoing it takes.

A state read is fingerprinted by the RFC 8785 digest of what it returned. ``check`` and the undo
read the state again and compare: a resource someone changed since is an ``UNDO_CONFLICT`` naming
the fields that differ, never overwritten unless a signed override says so. After the inverse call
the state is read once more; anything but the restored state is ``UNDO_UNVERIFIED``. The answers
have the shape of a server's undo answers and are signed by the Recorder's key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard

from hatp_journal.recorder.policy.decide import Decision
from hatp_journal.recorder.policy.reasons import Reason, ReasonCode
from hatp_journal.recorder.policy.registry_compensation import Compensation, HostCall, TemplateError, render
from hatp_journal.recorder.record.written_bodies import HostUndoRecord
from hatp_journal.toolkit.canonical import canonical_bytes, sha256_digest
from hatp_journal.toolkit.clock import wire_time
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import SigningKey, answer_payload
from hatp_journal.toolkit.wire import PROTOCOL

if TYPE_CHECKING:  # named only: steps.py imports this module, and reading commands don't load mcp
    from mcp.types import CallToolResult

    from hatp_journal.recorder.undo.steps import Step

HOST_MEMBER = "hostUndo"
"""The call entry's member that holds what the host needs to undo the call."""

HOST_SNAPSHOT_BYTES = 262_144
"""Largest snapshot (and state) the Run Record keeps, in canonical bytes; a larger one is not taken,
and the call asks as if the snapshot had failed."""

SHOWN_CHARS = 120
"""How much of a changed value a conflict shows (the rest is cut, marked with …)."""

Call = Callable[[str, dict[str, Any]], Awaitable["CallToolResult"]]
"""Calls one tool of the step's server (the gateway's or the undo's connection to it)."""


class HostReadFailed(Exception):
    """A snapshot or state read failed, answered an error, or returned too much to keep."""


async def read(call: Call, request: Mapping[str, Any]) -> Any:
    """What one read returns: its structured content, else its text; an error is :class:`HostReadFailed`."""
    try:
        result = await call(str(request["tool"]), dict(request["arguments"]))
    except Exception as error:  # noqa: BLE001 -- any failure of a read means: no protection
        raise HostReadFailed(f"{request['tool']} failed: {error}") from None
    if result.is_error:
        raise HostReadFailed(f"{request['tool']} answered an error: {_text(result)}")
    value = result.structured_content if result.structured_content is not None else {"text": _text(result)}
    size = len(canonical_bytes(value))
    if size > HOST_SNAPSHOT_BYTES:
        raise HostReadFailed(f"{request['tool']} returned {size} bytes, more than {HOST_SNAPSHOT_BYTES}")
    return value


def _text(result: CallToolResult) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


def _rendered(call: HostCall, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": call.tool, "arguments": render(call.arguments, data)}


async def take_snapshot(compensation: Compensation, arguments: dict[str, Any], call: Call) -> dict[str, Any]:
    """The snapshot read before the call (``{}`` when the tool has none); :class:`HostReadFailed`."""
    if compensation.snapshot is None:
        return {}
    try:
        request = _rendered(compensation.snapshot, {"args": arguments})
    except TemplateError as error:
        raise HostReadFailed(f"snapshot: {error}") from None
    value = await read(call, request)
    return {"snapshot": value, "before": sha256_digest(value)}


async def host_member(
    compensation: Compensation,
    *,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    result: Mapping[str, Any],
    snapshot: dict[str, Any],
    call: Call,
    key: SigningKey,
    now: datetime,
) -> dict[str, Any]:
    """The call entry's ``hostUndo`` member once the call answered: the snapshot, the state the call
    left (read now), the rendered state read and inverse call, what the undo must restore, and the
    Recorder's signature over all of it. ``{"failed": why}`` when the host can't undo the call."""
    if result.get("isError"):
        return HostUndoRecord(
            failed="the call answered an error; the host undoes only calls that succeeded"
        ).wire()
    data = {
        "args": arguments,
        "result": _value(result),
        **({"snapshot": snapshot["snapshot"]} if snapshot else {}),
    }
    try:
        state = _rendered(compensation.state_read(), data)
        member = HostUndoRecord.model_construct(
            server=server,
            tool=tool,
            resource=render(compensation.resource, data),
            summary=render(compensation.summary, data) if compensation.summary else f"{server}.{tool}",
            **snapshot,  # the snapshot and its digest (``before``), when the registry takes one
            state=state,
            inverse=_rendered(compensation.inverse, data),
            restored=sha256_digest(render(compensation.restored, data)),
        )
        left = await read(call, state)
    except (TemplateError, HostReadFailed) as error:
        return HostUndoRecord(failed=f"the host can't undo it: {error}").wire()
    member = member.model_copy(update={"after": sha256_digest(left), "after_state": left})
    receipt = key.sign({HOST_MEMBER: member.wire()}, wire_time(now)).wire()
    return member.model_copy(update={"receipt": receipt}).wire()


def _value(result: Mapping[str, Any]) -> Any:
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content")
    items = content if isinstance(content, list) else []
    return {"text": "".join(str(i.get("text", "")) for i in items if isinstance(i, dict))}


def undoable(member: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a recorded ``hostUndo`` member is one the host can undo (not a ``failed`` one)."""
    return (
        isinstance(member, dict)
        and all(isinstance(member.get(name), dict) for name in ("state", "inverse"))
        and isinstance(member.get("after"), str)
    )


def host_resource(body: Mapping[str, Any]) -> str | None:
    """The resource a call the host undoes wrote, as its registry declared it (links and chains
    follow it as they follow a server's declaration); None for any other call."""
    member = body.get(HOST_MEMBER)
    outcome = body.get("outcome")
    succeeded = isinstance(outcome, dict) and outcome.get("status") == "ok"
    return str(member["resource"]) if succeeded and undoable(member) else None


def host_journal(member: dict[str, Any]) -> dict[str, Any]:
    """The journal object a host-undone step is planned by, as if its server had sent it.

    Its "token" is the ``hostUndo`` member itself: its digest names it in every answer.
    """
    effect = {
        "summary": str(member.get("summary", "")),
        "resource": str(member.get("resource", "")),
        "version": member["after"],
        **({"before": member["before"]} if isinstance(member.get("before"), str) else {}),
    }
    return {
        "server": str(member.get("server", "")),
        "effect": effect,
        "compensationTokenDigest": digest_of(member),
    }


def digest_of(member: Mapping[str, Any]) -> str:
    """What names a ``hostUndo`` member in the host's answers (its token digest)."""
    return sha256_digest(dict(member))


async def host_check(step: Step, call: Call, key: SigningKey, now: datetime) -> dict[str, Any]:
    """The host's ``check``: the state read again and compared with what the call left."""
    member = step.entry.body[HOST_MEMBER]
    found = await read(call, member["state"])
    return _answer(step, "check", member, member["after"], found, key, now)


async def host_compensate(
    step: Step, request: Mapping[str, Any], call: Call, key: SigningKey, now: Callable[[], datetime]
) -> dict[str, Any]:
    """The host's undo: re-read (conflict unless overridden), the inverse call, then a read to verify.

    A read that fails is :class:`HostReadFailed` (no answer: the step can be retried); an inverse
    the server refuses is ``UNDO_FAILED`` with the server's words, and nothing else changed.
    """
    member = step.entry.body[HOST_MEMBER]
    expected = str(request.get("ifVersion") or member["after"])
    found = await read(call, member["state"])
    if sha256_digest(found) == member["restored"] != expected:
        # Already as before the call: a retry after the inverse went through without an answer.
        already = _base(step, "compensate", member, expected, member["restored"])
        message = "already as it was before the call; undone by the host, not the server"
        return _signed(
            {**already, "status": "done", "versionLeft": member["restored"], "message": message}, key, now()
        )
    if sha256_digest(found) != expected and not request.get("override"):
        return _answer(step, "compensate", member, expected, found, key, now())
    inverse = member["inverse"]
    try:
        result = await call(str(inverse["tool"]), dict(inverse["arguments"]))
    except Exception as error:  # noqa: BLE001 -- a lost server: no answer, the step is retried
        raise HostReadFailed(f"{inverse['tool']} failed: {error}") from None
    base = _base(step, "compensate", member, expected, sha256_digest(found))
    if request.get("override"):
        base["override"] = request["override"]
    if result.is_error:
        message = f"{inverse['tool']} refused the undo: {_text(result)}"
        return _signed(
            {**base, "status": "failed", "code": ErrorCode.UNDO_FAILED, "message": message}, key, now()
        )
    left = await read(call, member["state"])
    base["versionLeft"] = sha256_digest(left)
    if base["versionLeft"] != member["restored"]:
        message = f"after {inverse['tool']}, {member['resource']} is not as it was before the call"
        unverified = {**base, "status": "unverified", "code": ErrorCode.UNDO_UNVERIFIED, "message": message}
        return _signed(unverified, key, now())
    return _signed({**base, "status": "done", "message": "undone by the host, not the server"}, key, now())


def snapshot_asks(decision: Decision, error: HostReadFailed) -> Decision:
    """``decision`` turned into an ask because the snapshot the undo needs could not be taken."""
    reason = Reason(
        code=ReasonCode.SNAPSHOT_FAILED, detail=f"the host's snapshot before the call failed: {error}"
    )
    return decision.model_copy(update={"action": "ask", "reasons": (*decision.reasons, reason)})


def _answer(
    step: Step,
    operation: str,
    member: Mapping[str, Any],
    expected: str,
    found: Any,
    key: SigningKey,
    now: datetime,
) -> dict[str, Any]:
    """A check answer, or a compensate answer that stopped at a conflict."""
    base = _base(step, operation, member, expected, sha256_digest(found))
    if base["versionFound"] == expected:
        return _signed({**base, "status": "ok"}, key, now)
    # What changed is named against the state the call left; a later write of the run is not
    # kept in this entry, so against it only the fingerprints can differ.
    changes = _changes(member.get("afterState"), found) if expected == member["after"] else []
    named = ", ".join(c["field"] for c in changes) or "its fingerprint"
    message = f"{member['resource']} changed since the call ({named}); the host did not overwrite it"
    conflict = {**base, "status": "conflict", "code": ErrorCode.UNDO_CONFLICT, "message": message}
    return _signed({**conflict, "changes": changes}, key, now)


def _base(step: Step, operation: str, member: Mapping[str, Any], expected: str, found: str) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "server": step.server,
        "operation": operation,
        "tokenDigest": digest_of(member),
        "tool": step.tool,
        "resource": str(member.get("resource", "")),
        "versionExpected": expected,
        "versionFound": found,
        "evidence": ["undone by the host, not the server"],
    }


def _signed(answer: dict[str, Any], key: SigningKey, now: datetime) -> dict[str, Any]:
    answer = {**answer, "at": wire_time(now)}
    return {**answer, "receipt": key.sign(answer_payload(answer), answer["at"]).wire()}


def _changes(before: Any, now: Any, prefix: str = "") -> list[dict[str, Any]]:
    """The fields (dotted paths) whose values differ between two read results."""
    if isinstance(before, dict) and isinstance(now, dict):
        found: list[dict[str, Any]] = []
        for name in sorted(set(before) | set(now)):
            found += _changes(before.get(name), now.get(name), f"{prefix}{name}.")
        return found
    if before == now:
        return []
    return [{"field": prefix.rstrip(".") or "(value)", "expected": _shown(before), "now": _shown(now)}]


def _shown(value: Any) -> Any:
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return value[:SHOWN_CHARS] + "…"
    return value
