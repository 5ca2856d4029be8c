"""Host-declared compensation: the Recorder undoes calls of a server that knows nothing of undo.

The registry gives a tool a ``snapshot`` read, a ``state`` read and an ``inverse`` call
(:mod:`hatp_journal.recorder.policy.registry_compensation`). Around the call the Recorder takes the
snapshot (a snapshot that fails or is too large makes the call ask: it never runs unprotected),
then reads the state the call left and journals all of it in the call entry's ``hostUndo`` member,
signed by the Recorder: the host, not the server, vouches for what undoing it takes.

A state read is fingerprinted by the RFC 8785 digest of what it returned. A call whose state after
equals what its undo would restore changed nothing: it is never undone (steps.py). ``check`` and
the undo read the state again and compare: a resource someone changed since is an
``UNDO_CONFLICT`` naming each path that differs (old → new), never overwritten unless a signed
override says so. An inverse the registry says also removes more (``cascade``) is never run while
that would take an element the call did not add: a conflict naming it, whatever the override
(host_cascade.py). After the inverse call(s) the state is read once more and must be what the
undo said it would leave: the snapshot, or, when someone changed the resource since, the state
found with only the call's own change taken back (host_diff.py); anything else is
``UNDO_UNVERIFIED``. The answers have the shape of a server's undo answers and are signed by the
Recorder's key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.changes.host_cascade import refusal, rendered, would_remove
from hatp_journal.recorder.changes.host_diff import changes, listed, only_in, same, undone
from hatp_journal.recorder.policy.decide import Decision
from hatp_journal.recorder.policy.reasons import Reason, ReasonCode
from hatp_journal.recorder.policy.registry_compensation import (
    Compensation,
    HostCall,
    TemplateError,
    paths_under,
    render,
)
from hatp_journal.recorder.policy.template_paths import resolve
from hatp_journal.recorder.record.written_bodies import HostUndoRecord
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import SigningKey, answer_payload
from hatp_journal.toolkit.wire import PROTOCOL

if TYPE_CHECKING:  # named only: steps.py imports this module, and reading commands don't load mcp
    from mcp.types import CallToolResult

    from hatp_journal.recorder.changes.steps import Step

HOST_MEMBER = "hostUndo"
"""The call entry's member that holds what the host needs to undo the call."""

HOST_SNAPSHOT_BYTES = 262_144
"""Largest snapshot (and state) the Run Record keeps, in canonical bytes; a larger one is not taken,
and the call asks as if the snapshot had failed."""

NOTHING_CHANGED = "changed nothing: the state after the call is what undoing it would restore"

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
    """The snapshot read before the call (``{}`` when the tool has none); :class:`HostReadFailed`,
    also when it has not the shape the undo's templates need (the call then asks: it never runs
    with an undo that can't be rendered)."""
    if compensation.snapshot is None:
        return {}
    try:
        request = _rendered(compensation.snapshot, {"args": arguments})
    except TemplateError as error:
        raise HostReadFailed(f"snapshot: {error}") from None
    value = await read(call, request)
    templates = [
        *(c.arguments for c in compensation.inverses()),
        compensation.restored,
        compensation.summary,
        *(c.of for c in compensation.cascade),
    ]
    try:  # {added} and {removed} have the snapshot's shape: what they name must be there too
        for path in [p for root in ("snapshot", "added", "removed") for p in paths_under(templates, root)]:
            resolve({path.root: value}, path)
    except TemplateError as error:
        raise HostReadFailed(f"the snapshot has not the shape the registry expects: {error}") from None
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
    data: dict[str, Any] = {
        "args": arguments,
        "result": _value(result),
        **({"snapshot": snapshot["snapshot"]} if snapshot else {}),
    }
    try:
        state = _rendered(compensation.state_read(), data)
        left = await read(call, state)
        if snapshot:  # what the call itself added and removed, element by element
            data |= {
                "added": only_in(left, snapshot["snapshot"]),
                "removed": only_in(snapshot["snapshot"], left),
            }
        inverses = [_rendered(inverse, data) for inverse in compensation.inverses()]
        cascade = rendered(compensation.cascade, data) if compensation.cascade else None
        member = HostUndoRecord.model_construct(
            server=server,
            tool=tool,
            resource=render(compensation.resource, data),
            summary=render(compensation.summary, data) if compensation.summary else f"{server}.{tool}",
            **snapshot,  # the snapshot and its digest (``before``), when the registry takes one
            state=state,
            inverse=inverses[0] if len(inverses) == 1 else inverses,
            restored=sha256_digest(render(compensation.restored, data)),
            after=sha256_digest(left),
            after_state=left,
            cascade=cascade,
        )
    except (TemplateError, HostReadFailed) as error:
        return HostUndoRecord(failed=f"the host can't undo it: {error}").wire()
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
        and isinstance(member.get("state"), dict)
        and bool(inverse_calls(member))
        and isinstance(member.get("after"), str)
    )


def inverse_calls(member: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The recorded inverse calls, in order (one is recorded as an object, several as an array);
    empty when any of them is not an object."""
    inverse = member.get("inverse")
    calls: list[Any] = inverse if isinstance(inverse, list) else [inverse]
    return (
        [c for c in calls if isinstance(c, dict)] if calls and all(isinstance(c, dict) for c in calls) else []
    )


def changed_nothing(member: Mapping[str, Any]) -> bool:
    """Whether the state the call left is the one its undo would restore: nothing to undo."""
    return member.get("after") == member.get("restored")


def host_resource(member: Any, *, succeeded: bool) -> str | None:
    """The resource a call the host undoes wrote, as its registry declared it (links and chains
    follow it as they follow a server's declaration); None for any other call. ``member`` is the
    call's ``hostUndo`` as recorded, ``succeeded`` whether its outcome was ``ok``."""
    if succeeded and undoable(member) and not changed_nothing(member):
        return str(member["resource"])
    return None


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
    member = step.host_undo  # by_host: an undoable member (see undoable)
    found = await read(call, member["state"])
    return _answer(step, "check", member, member["after"], found, key, now)


def _unchanged(member: Mapping[str, Any], expected: str, found: Any) -> bool:
    """Whether ``found`` is the state the undo expects: by its fingerprint, or, for the state the
    call left, the same elements in another order (a server that rewrote its file in another order)."""
    if sha256_digest(found) == expected:
        return True
    return expected == member["after"] and "afterState" in member and same(found, member["afterState"])


async def host_compensate(
    step: Step, request: Mapping[str, Any], call: Call, key: SigningKey, now: Callable[[], datetime]
) -> dict[str, Any]:
    """The host's undo: re-read (conflict unless overridden), the inverse call, then a read to verify.

    A read that fails is :class:`HostReadFailed` (no answer: the step can be retried); an inverse
    the server refuses is ``UNDO_FAILED`` with the server's words, and nothing else changed.
    """
    member = step.host_undo  # by_host: an undoable member (see undoable)
    expected = str(request.get("ifVersion") or member["after"])
    found = await read(call, member["state"])
    if _restored(member, found) and sha256_digest(found) != expected:
        # Already as before the call: a retry after the inverse went through without an answer.
        already = _base(step, "compensate", member, expected, member["restored"])
        message = "already as it was before the call; undone by the host, not the server"
        return _signed(
            {**already, "status": "done", "versionLeft": member["restored"], "message": message}, key, now()
        )
    if not _unchanged(member, expected, found) and not request.get("override"):
        return _answer(step, "compensate", member, expected, found, key, now())
    taken = would_remove(member, found)
    if taken:  # the server would delete with it what the call did not make: no override lifts this
        return _cascade_conflict(step, "compensate", member, expected, found, taken, key, now())
    base = _base(step, "compensate", member, expected, sha256_digest(found))
    if request.get("override"):
        base["override"] = request["override"]
    for inverse in inverse_calls(member):
        try:
            result = await call(str(inverse["tool"]), dict(inverse["arguments"]))
        except Exception as error:  # noqa: BLE001 -- a lost server: no answer, the step is retried
            raise HostReadFailed(f"{inverse['tool']} failed: {error}") from None
        if result.is_error:
            message = f"{inverse['tool']} refused the undo: {_text(result)}"
            return _signed(
                {**base, "status": "failed", "code": ErrorCode.UNDO_FAILED, "message": message}, key, now()
            )
    left = await read(call, member["state"])
    base["versionLeft"] = sha256_digest(left)
    kept = _kept(member, found)
    if not _as_said(member, found, left):
        message = f"after the undo, {member['resource']} is not as the undo said it would leave it"
        wanted = _wanted(member, found)
        if wanted is not None:
            message += f" ({listed(changes(wanted, left))})"
        unverified = {**base, "status": "unverified", "code": ErrorCode.UNDO_UNVERIFIED, "message": message}
        return _signed(unverified, key, now())
    message = "undone by the host, not the server"
    wanted = _wanted(member, found)
    lost = changes(wanted, left) if kept and wanted is not None and not same(left, wanted) else []
    if lost:  # left as before the call: what changed since went with it, as the override allowed
        message += f"; the override overwrote what changed since the call: {listed(lost)}"
        kept = []
    elif kept:
        message += f"; kept what changed since the call: {listed(kept)}"
    return _signed({**base, "status": "done", "message": message, "changes": kept}, key, now())


def _restored(member: Mapping[str, Any], found: Any) -> bool:
    """Whether ``found`` is the state the undo restores (arrays compared as collections)."""
    if sha256_digest(found) == member["restored"]:
        return True
    return _by_snapshot(member) and same(found, member["snapshot"])


def _by_snapshot(member: Mapping[str, Any]) -> bool:
    """Whether the undo restores the snapshot, read by the state read (so the two compare)."""
    return "snapshot" in member and member.get("restored") == member.get("before") and "afterState" in member


def _wanted(member: Mapping[str, Any], found: Any) -> Any:
    """What the state read must give after the undo: ``found`` with only the call's own change
    taken back (None when the undo does not restore a snapshot: then only the digest says)."""
    if not _by_snapshot(member):
        return None
    return undone(found, member["snapshot"], member["afterState"])


def _as_said(member: Mapping[str, Any], found: Any, left: Any) -> bool:
    if sha256_digest(left) == member["restored"]:
        return True
    wanted = _wanted(member, found)
    return wanted is not None and same(left, wanted)


def _kept(member: Mapping[str, Any], found: Any) -> list[dict[str, Any]]:
    """What someone changed since the call (kept by an overriding undo), path by path."""
    if "afterState" not in member or sha256_digest(found) == member["after"]:
        return []
    return changes(member["afterState"], found)


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
    if _unchanged(member, expected, found):
        taken = would_remove(member, found)
        if taken:
            return _cascade_conflict(step, operation, member, expected, found, taken, key, now)
        return _signed({**base, "status": "ok"}, key, now)
    # What changed is named against the state the call left; a later write of the run is not
    # kept in this entry, so against it only the fingerprints can differ.
    found_changes = changes(member.get("afterState"), found) if expected == member["after"] else []
    named = listed(found_changes) or "its fingerprint"
    message = f"{member['resource']} changed since the call ({named}); the host did not overwrite it"
    conflict = {**base, "status": "conflict", "code": ErrorCode.UNDO_CONFLICT, "message": message}
    return _signed({**conflict, "changes": found_changes}, key, now)


def _cascade_conflict(
    step: Step,
    operation: str,
    member: Mapping[str, Any],
    expected: str,
    found: Any,
    taken: list[dict[str, Any]],
    key: SigningKey,
    now: datetime,
) -> dict[str, Any]:
    """A conflict: the inverse would also remove, through the server's cascade, ``taken``."""
    base = _base(step, operation, member, expected, sha256_digest(found))
    tools = ", ".join(str(call["tool"]) for call in inverse_calls(member))
    message = refusal(str(member.get("resource", "")), tools, taken)
    conflict = {**base, "status": "conflict", "code": ErrorCode.UNDO_CONFLICT, "message": message}
    return _signed({**conflict, "changes": taken}, key, now)


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
