"""The verifier's parts (``bodies.BodyChecks``): what it keeps of earlier entries, and how it reads a
body's members and signatures without trusting their shape (never raising but :class:`BadBody`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.directory import Directory, DirectoryError
from hatp_journal.recorder.record.models import Entry
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import SignatureTask, VerifyKey, signature_task, strict_receipt, verify

_MAX_SCAN = 100_000
"""Values looked at per body when searching for a token (bodies are bounded at intake)."""


class BadBody(Exception):
    """A body (or a signed object inside it) is not of the shape its kind requires."""


@dataclass(frozen=True)
class _Call:
    server: str | None
    token_digest: str | None
    host: bool = False  # undone by the host: its answers are signed by the Recorder's key


@dataclass(frozen=True)
class _Ask:
    call_digest: Any
    approver: Any


@dataclass(frozen=True)
class _Target:
    found: bool
    role: Any
    why: str
    unknown: bool = False  # the decision names no earlier ask or plan at all


@dataclass(frozen=True)
class _Plan:
    digest: Any
    approver: Any
    conflicts: dict[str, Any]


def _call_digest(body: Mapping[str, Any]) -> str | None:
    """What an approval of a call signs: the digest of ``{server, tool, arguments}``."""
    return _safely_digest({name: body.get(name) for name in ("server", "tool", "arguments")})


def _override_problem(
    override: Any, approval: Mapping[str, Any], plan: _Plan | None, key: VerifyKey
) -> str | None:
    """Why one signed override of ``plan`` (the decision's, if any) does not hold; None if it does."""
    if not isinstance(override, Mapping) or not isinstance(override.get("override"), Mapping):
        return "not a signed override"
    choice = override["override"]
    if plan is None:
        return "overrides go with a plan's approval"
    for name in ("plan", "planDigest", "by"):
        if choice.get(name) != approval.get(name):
            return f"its {name} is not the approval's"
    step = choice.get("step")
    if not isinstance(step, str) or step not in plan.conflicts:
        return f"{step!r} is not a conflict of the plan"
    if choice.get("versionFound") != plan.conflicts[step]:
        return "its versionFound is not the conflict's"
    if not _signed(override.get("receipt"), {"override": dict(choice)}, key):
        return "not signed by the approver's key"
    return None


def parse_directory(snapshot: Any) -> Directory | None:
    """A directory snapshot as a :class:`Directory`, or None when it is not one."""
    try:
        return Directory.model_validate(snapshot)
    except ValidationError:
        return None


def _person_key(directory: Directory, person: str) -> VerifyKey | None:
    found = directory.person(person)
    try:
        return found.verify_key() if found is not None else None
    except (DirectoryError, KeyFileError):
        return None


def _signed(raw: Any, payload: Any, key: VerifyKey) -> bool:
    receipt = strict_receipt(raw)
    return receipt is not None and verify(receipt, payload, {key.kid: key})


def _signed_task(raw: Any, payload: Any, key: VerifyKey) -> SignatureTask | None:
    """:func:`_signed` up to its signature check."""
    receipt = strict_receipt(raw)
    return signature_task(receipt, payload, {key.kid: key}) if receipt is not None else None


_AGENTS_OWN = frozenset({"arguments", "host"})
"""Members holding what the agent and its host sent, as they sent it: a member named
``compensationToken`` there is the agent's word, not a token (the Recorder strips tokens from what
tool servers send, and refuses a result with one anywhere but its place: docs/run-record.md)."""


def _holds_token(entry: Entry, stored: bytes | None = None) -> bool:
    """Whether a compensation token is written anywhere in the entry's body but what the agent sent."""
    request = entry.body.get("request")
    if entry.kind == "undo-intent" and isinstance(request, Mapping) and "token" in request:
        return True
    if stored is not None and b'"compensationToken"' not in stored and b"\\u" not in stored:
        # The entry's bytes never hold that string, nor could spell it otherwise (only a \u escape
        # could): no member of that name anywhere, without walking the body.
        return False
    if "compensationToken" in entry.body:
        return True
    # Bodies parsed from JSON hold only dicts and lists: exact type checks keep this walk cheap.
    stack: list[Any] = [value for name, value in entry.body.items() if name not in _AGENTS_OWN]
    seen = 0
    while stack and seen < _MAX_SCAN:
        value = stack.pop()
        seen += 1
        kind = type(value)
        if kind is dict:
            if "compensationToken" in value:
                return True
            stack.extend(child for child in value.values() if type(child) is dict or type(child) is list)
        elif kind is list:
            stack.extend(child for child in value if type(child) is dict or type(child) is list)
    return False


def _mapping(body: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = body.get(name)
    if not isinstance(value, Mapping):
        raise BadBody(f"{name} is not an object")
    return value


def _list(body: Mapping[str, Any], name: str) -> list[Any]:
    value = body.get(name, [])
    if not isinstance(value, list):
        raise BadBody(f"{name} is not a list")
    return value


def _optional_str(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadBody(f"{name} is not a string")
    return value


def _safely(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except (ValidationError, ValueError, TypeError, RecursionError):
        return False


def _prepared(prepare: Callable[[], SignatureTask | None]) -> SignatureTask | None:
    """A check prepared as :func:`_safely` makes it: None (a failed check) for what it refuses."""
    try:
        return prepare()
    except (ValidationError, ValueError, TypeError, RecursionError):
        return None


def _safely_digest(value: Any) -> str | None:
    try:
        return sha256_digest(value)
    except (ValueError, TypeError, RecursionError):
        return None


def _why(keys: Mapping[str, VerifyKey]) -> str:
    return "does not verify against its keys" if keys else "has no key to verify it against"
