"""Helpers for the Run Record tests: signed call bodies, filled runs, pinned keys, tampering."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, answer_payload, call_payload, token_digest

AT = "2026-11-04T10:00:00Z"


class TickingClock:
    """A deterministic clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 4, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def call_body(server_key: SigningKey, n: int, *, server: str = "crm") -> dict[str, Any]:
    """An entry body as the gateway journals a call: arguments, decision and the signed journal object."""
    arguments = {"deal_id": f"D-{n}", "stage": "Won"}
    journal: dict[str, Any] = {
        "protocol": "hatp-journal/0.3",
        "server": server,
        "compensationTokenDigest": token_digest(f"ctk_{n}"),
        "undo": {"kind": "compensate", "undoBy": "2026-11-11T10:00:00Z", "via": "api", "sideEffects": []},
        "effect": {
            "summary": f"Deal D-{n} stage: Proposal → Won",
            "resource": f"crm://acme/deal/D-{n}",
            "version": "v13",
            "before": "v12",
            "uses": [],
        },
    }
    journal["receipt"] = server_key.sign(call_payload(journal, "update_deal", arguments), AT).wire()
    return {
        "server": server,
        "tool": "update_deal",
        "arguments": arguments,
        "decision": {"action": "allow", "policyDigest": "sha256:" + "0" * 64},
        "journal": journal,
    }


def answer_body(
    server_key: SigningKey, *, server: str = "crm", step: str = "e1", n: int = 1
) -> dict[str, Any]:
    """An undo-outcome entry body carrying a signed undo answer for the token of ``call_body(…, n)``."""
    answer: dict[str, Any] = {
        "protocol": "hatp-journal/0.3",
        "server": server,
        "operation": "compensate",
        "status": "done",
        "tokenDigest": token_digest(f"ctk_{n}"),
        "versionFound": "v13",
        "versionLeft": "v14",
        "at": AT,
    }
    answer["receipt"] = server_key.sign(answer_payload(answer), AT).wire()
    return {"server": server, "step": step, "answer": answer}


def fill(store: RunStore, run_id: str, count: int, server_key: SigningKey | None = None) -> None:
    """Append ``count`` entries: a signed call every fifth entry when a server key is given, else notes.
    Numbered on from the run's entries: a server signs each call once (a receipt in two entries is
    a replayed call)."""
    start = len(store.entries(run_id))
    for i in range(1, count + 1):
        n = start + i
        if server_key is not None and i % 5 == 1:
            store.append(run_id, "call", call_body(server_key, n))
        else:
            store.append(run_id, "note", {"n": i, "text": "checked the pipeline"})


def pins(store: RunStore) -> dict[str, VerifyKey]:
    """The verifier's pinned Recorder keys."""
    return {store.public_key.kid: store.public_key}


def server_pins(server_key: SigningKey, server: str = "crm") -> dict[str, dict[str, VerifyKey]]:
    """The verifier's pinned tool-server keys."""
    return {server: {server_key.kid: server_key.public}}


def tampered(record: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A deep copy of an exported record (as a JSON object) with ``change`` applied."""
    copied = copy.deepcopy(record)
    change(copied)
    return copied
