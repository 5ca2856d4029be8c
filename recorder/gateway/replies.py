"""What the Recorder answers an agent: a server's result with its token stripped and where it was
recorded, the Recorder's own answers (pending, refusals), and what a call entry keeps of a result's
journal object (bounded by ``max_journal_bytes``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastmcp.tools import ToolResult
from mcp.types import CallToolResult

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.gateway.agent_answers import said
from hatp_journal.recorder.intake.journal_objects import Intake, bounded
from hatp_journal.recorder.intake.tokens import Kept, misplaced, redact, refused_journal
from hatp_journal.toolkit.wire import META_KEY

HOST_META_KEY = "hatp/host"
HOST_META_BYTES = 65_536
"""Largest ``_meta["hatp/host"]`` kept: it names a few entries, nothing more."""


def with_recorder_meta(
    answer: dict[str, Any], key: str | None, wait: dict[str, Any] | None
) -> dict[str, Any]:
    """The answer with the run key to send back, and what became of an asked wait, in its
    ``_meta["hatp/recorder"]`` (a copy: the Recorder's own answers share it with structuredContent)."""
    meta = answer.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("hatp/recorder"), dict):
        return answer
    recorder = dict(meta["hatp/recorder"])
    if key is not None:
        recorder["runKey"] = key
    if wait is not None:
        recorder["wait"] = wait
    return {**answer, "_meta": {**meta, "hatp/recorder": recorder}}


def host_meta(meta: Any) -> dict[str, Any] | None:
    """What the agent's host said about this call (``_meta["hatp/host"]``, e.g. ``{"uses": ["e2"]}``).

    It is agent-sent, so what the record can't hold is replaced by ``{"rejected": why}``.
    """
    host = meta.get(HOST_META_KEY) if isinstance(meta, dict) else None
    if host is None:
        return None
    problem = "not a JSON object" if not isinstance(host, dict) else bounded(host)
    if problem is None and len(canonical_bytes(host)) > HOST_META_BYTES:
        problem = f"more than {HOST_META_BYTES} bytes"
    return host if problem is None else {"rejected": f"not kept: {problem}"}


def result_members(
    result: dict[str, Any], intake_of: Callable[[Any], Intake], server: str, limit: int
) -> tuple[dict[str, Any], list[Kept], str | None]:
    """A result's ``intake`` and ``journal`` members, the token to keep, and where the result put
    a journal object or token astray (None: nowhere; else the result is refused ``BAD_JOURNAL``).

    ``intake_of`` takes in the result's ``_meta``. The tool acted either way, so the call is
    journaled; a result refused whole keeps nothing of its object, so a token found out of its
    place goes nowhere: not the record, not the agent.
    """
    astray = misplaced(result)
    if astray is not None:
        return refused_journal(astray), [], astray
    members, tokens = journal_members(intake_of(result.get("_meta")), server, limit)
    return members, tokens, None


def journal_members(intake: Intake, server: str, limit: int) -> tuple[dict[str, Any], list[Kept]]:
    """The ``intake`` and ``journal`` members of a call entry, and the compensation token to keep.

    A verified object is kept whole (its token replaced by the digest); any other as received when
    it is plain JSON; one over ``limit`` canonical bytes by its size and digest only.
    """
    journal = intake.raw if intake.status == "verified" else kept_raw(intake.raw)
    oversize = oversized(journal, limit)
    if oversize is not None:
        # The call happened, so it is journaled: as unknown, with the object's size and digest.
        intake, journal = Intake("unresolved", "unknown", oversize["rejected"]), oversize
    kept, tokens = redact(server, journal)
    return {"intake": intake.wire(), "journal": kept}, tokens


def oversized(journal: Any, limit: int) -> dict[str, Any] | None:
    """What an entry keeps of a journal object (bounded at intake) over ``limit`` canonical bytes."""
    if surely_within(journal, limit):
        return None
    data = canonical_bytes(journal)
    if len(data) <= limit:
        return None
    return {
        "rejected": f"not kept: {len(data)} bytes, more than max_journal_bytes ({limit})",
        "bytes": len(data),
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
    }


_ascii_json = json.JSONEncoder(separators=(",", ":")).encode
"""The C encoder's ASCII form: never shorter than the canonical form but for a float's exponent."""

EXPONENT_SLACK = 20
"""Most bytes a float's canonical form adds to Python's (``1e+20``: ``100000000000000000000``)."""


def surely_within(journal: Any, limit: int) -> bool:
    """Whether ``journal``'s canonical form is surely at most ``limit`` bytes, told without writing it.

    Its ASCII JSON is never shorter (a non-ASCII character is six bytes there, at most four in
    UTF-8; the rest is written alike), but for a float in exponent form, which canonical JSON may
    write longer: every "e" gets ``EXPONENT_SLACK`` bytes. The C encoder costs a fraction of
    canonical JSON's walk; only a journal near or over the limit is measured exactly.
    """
    try:
        text = _ascii_json(journal)
    except (TypeError, ValueError, RecursionError):
        return False
    return len(text) + EXPONENT_SLACK * text.count("e") <= limit


def kept_raw(raw: Any) -> Any:
    """An unresolved object is kept as received when it is plain JSON, else summarized."""
    return raw if bounded(raw) is None else {"rejected": "not kept: too large, too deep or not JSON"}


def strip_token(meta: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(meta.get(META_KEY), dict):
        return meta
    journal = {k: v for k, v in meta[META_KEY].items() if k != "compensationToken"}
    return {**meta, META_KEY: journal}


def for_agent(result: dict[str, Any], run: str, entry_id: str) -> dict[str, Any]:
    """The downstream's result as it came, but for its token and with where it was recorded."""
    meta = result.get("_meta")
    kept = strip_token(meta) if isinstance(meta, dict) else {}
    kept = {**kept, "hatp/recorder": {"run": run, "entry": entry_id}}
    if "_meta" not in result:
        return {**result, "_meta": kept}
    return {key: kept if key == "_meta" else value for key, value in result.items()}


def tool_result(answer: dict[str, Any]) -> ToolResult:
    """An answer as the mcp library serves it."""
    result = CallToolResult.model_validate(answer)
    return ToolResult(
        content=list(result.content),
        structured_content=result.structured_content,
        meta=result.meta,
        is_error=bool(result.is_error),
    )


def own_answer(text: str, body: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    """One of the Recorder's own answers, as plain JSON."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": body,
        "_meta": {"hatp/recorder": body},
        "isError": is_error,
    }


def pending_answer(run: str, entry_id: str) -> dict[str, Any]:
    """Tell the agent the call waits for a person. The reasons stay in the record: the policy
    (caps, windows, who may approve) is the organisation's and never shown to the agent."""
    body = {
        "status": "pending_approval",
        "run": run,
        "ask": entry_id,
        "message": "This call needs a person's approval; it has not been made. Call again later.",
    }
    sentence = (
        f"Waiting for approval ({entry_id}): this call needs a person's approval and has not been made. "
        "Call again with the same arguments once approved (a denied or expired ask is refused then)."
    )
    return own_answer(said(sentence, body), body, is_error=False)


def refused_answer(code: str, message: str, entry_id: str) -> dict[str, Any]:
    body = {"code": code, "message": message, "entry": entry_id}
    return own_answer(f"{code}: {message}", body, is_error=True)
