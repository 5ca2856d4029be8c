"""An agent's retry gets the first answer: a write is made once even when its answer was lost.

An agent that did not get the answer to a call (its connection dropped, its Recorder was killed)
calls again. A call is a **retry** when it is the same call — same run, server, tool and arguments —
as the latest write of that tool in its run, answered in the last ``retry_window_seconds`` (a write
of the tool with other arguments since means this one is meant: A, B, A is three writes), or when
it sends the same idempotency key (``_meta["hatp/idempotencyKey"]``) as an earlier call of its run,
within ``KEY_KEPT``. A retry is not forwarded and opens no ask: it gets the answer the first call
got, from the store (``rec_answer``, kept in the same transaction as the call's entry), marked
``"replayed": true``.

A call with an idempotency key is matched by its key alone: the same call with a new key is a new
call, so an agent that means to do the same thing twice says so. Reads are never replayed (a read
again is a fresh read), nor calls that failed to reach their server (nothing was made).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from hatp_journal._shared.clock import wire_time
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.record.answers import FoundAnswer, KeptAnswer, prune_answers

IDEMPOTENCY_META = "hatp/idempotencyKey"
"""Where a call names itself for retries: ``_meta["hatp/idempotencyKey"]``, 1-255 characters."""
KEY_KEPT = timedelta(hours=24)
"""How long an idempotency key is recognised (and its answer kept)."""
MAX_KEY_CHARS = 255
PRUNE_EVERY = 1000
"""Answers kept by one process between two prunes of the answers no retry can get any more."""

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class RetryCode(StrEnum):
    """Stable codes of calls refused over their idempotency key (journaled as refused)."""

    IDEMPOTENCY_KEY_INVALID = "IDEMPOTENCY_KEY_INVALID"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"


@dataclass(frozen=True)
class KeyRefusal:
    """Why an idempotency key can't be used."""

    code: RetryCode
    message: str


def sent_idempotency_key(meta: Any) -> str | KeyRefusal | None:
    """The digest of the idempotency key a call sent in its ``_meta``, a refusal, or None (no key)."""
    key = meta.get(IDEMPOTENCY_META) if isinstance(meta, dict) else None
    if key is None:
        return None
    if (
        not isinstance(key, str)
        or not 1 <= len(key) <= MAX_KEY_CHARS
        or any(unicodedata.category(c) in ("Cc", "Cs") for c in key)
    ):
        return KeyRefusal(
            RetryCode.IDEMPOTENCY_KEY_INVALID,
            f"{IDEMPOTENCY_META} must be a string of 1-{MAX_KEY_CHARS} characters without control characters",
        )
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CallName:
    """What names a call for retries: its tool (server/tool), its digest, and the agent's key if any."""

    tool: str
    call: str
    key: str | None


class Retries:
    """Finds the answer a retried call gets, and keeps the answers later retries may get."""

    def __init__(self, store: RunStore, window_seconds: float, max_bytes: int) -> None:
        self.store = store
        self.window = timedelta(seconds=window_seconds)
        self.max_bytes = max_bytes
        self._kept = 0

    def watched(self, key: str | None) -> bool:
        """Whether a call with ``key`` may be a retry, or be retried (0 turns the window off)."""
        return key is not None or self.window > timedelta(0)

    def find(self, run: str, name: CallName, now: datetime) -> FoundAnswer | None:
        """The earlier answer the call ``name`` gets, if it is a retry."""
        since = now - (KEY_KEPT if name.key is not None else self.window)
        return self.store.find_answer(run, tool=name.tool, call=name.call, key=name.key, since=since)

    def keep(self, answer: dict[str, Any], name: CallName, now: datetime) -> KeptAnswer:
        """What to keep of ``answer`` (as the agent gets it, but for ``_meta["hatp/recorder"]``)."""
        self._kept += 1
        if self._kept % PRUNE_EVERY == 0:
            self.prune(now)
        try:
            data: bytes | None = _encode(answer).encode()
        except (TypeError, ValueError, RecursionError):
            data = None
        if data is not None and len(data) > self.max_bytes:
            data = None
        return KeptAnswer(tool=name.tool, call=name.call, key=name.key, at=wire_time(now), data=data)

    def prune(self, now: datetime) -> int:
        """Drop answers no retry can get any more."""
        return prune_answers(self.store.engine, unkeyed_before=now - self.window, keyed_before=now - KEY_KEPT)


def replayed(found: FoundAnswer, run: str) -> dict[str, Any]:
    """A retry's answer: the first call's, naming its entry, ``"replayed": true``."""
    if found.data is None:
        body = {
            "code": "ANSWER_NOT_KEPT",
            "message": f"this call was made already ({found.entry}); its answer was too large to keep",
            "run": run,
            "entry": found.entry,
            "replayed": True,
        }
        text = f"ANSWER_NOT_KEPT: {body['message']}"
        content = [{"type": "text", "text": text}]
        return {
            "content": content,
            "structuredContent": body,
            "_meta": {"hatp/recorder": body},
            "isError": True,
        }
    answer: dict[str, Any] = json.loads(found.data)
    meta = answer.get("_meta")
    ours = {"run": run, "entry": found.entry, "replayed": True}
    return {**answer, "_meta": {**(meta if isinstance(meta, dict) else {}), "hatp/recorder": ours}}


def unsent(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` without its ``_meta["hatp/recorder"]`` (which a replay writes afresh)."""
    meta = answer.get("_meta")
    if not isinstance(meta, dict) or "hatp/recorder" not in meta:
        return answer
    return {**answer, "_meta": {k: v for k, v in meta.items() if k != "hatp/recorder"}}
