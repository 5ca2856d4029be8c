"""Tool-server receipts inside entries, checked against the verifier's pinned server keys.

An entry carries a call receipt when its body has ``journal`` (the ``_meta["hatp/journal"]``
object as received), ``tool``, ``server`` and ``arguments`` (or ``argumentsDigest``); an undo
receipt when it has ``answer`` (a check/compensate answer as received) and ``server``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from hatp_journal.recorder.record.models import Entry
from hatp_journal.recorder.record.report import Check, Findings, Problem
from hatp_journal.toolkit.signing import VerifyKey, verify, verify_answer, verify_call
from hatp_journal.toolkit.wire import Receipt


def check_receipts(
    entries: Sequence[Entry], server_keys: Mapping[str, Mapping[str, VerifyKey]], found: Findings
) -> int:
    """Verify every receipt-bearing entry; return how many receipts were checked."""
    checked = 0
    for entry in entries:
        body = entry.body
        server = body.get("server")
        keys = server_keys.get(server, {}) if isinstance(server, str) else {}
        for what, valid in _receipts(body, keys):
            checked += 1
            if valid:
                continue
            why = "does not verify against its pinned keys" if keys else "has no pinned key"
            detail = f"{what} receipt of server {server!r} {why}"
            if _flagged(body):
                # The Recorder kept it as unresolved at intake: already reported, not a new failure.
                found.flagged.append(_problem(entry.id, detail))
            else:
                found.problems.append(_problem(entry.id, detail))
    return checked


def _receipts(body: Mapping[str, Any], keys: Mapping[str, VerifyKey]) -> list[tuple[str, bool]]:
    if not isinstance(body.get("server"), str):
        return []
    found: list[tuple[str, bool]] = []
    journal, tool = body.get("journal"), body.get("tool")
    # An error result carries a stable code and no receipt: there is nothing of the server's to verify.
    if isinstance(journal, Mapping) and isinstance(tool, str) and set(journal) != {"error"}:
        arguments, digest = body.get("arguments"), body.get("argumentsDigest")
        if isinstance(arguments, Mapping):
            found.append(("call", _safely(lambda: verify_call(journal, tool, arguments, keys))))
        elif isinstance(digest, str):
            found.append(("call", _safely(lambda: _verify_digest_call(journal, tool, digest, keys))))
    answer = body.get("answer")
    if isinstance(answer, Mapping):
        found.append(("undo", _safely(lambda: verify_answer(answer, keys))))
    return found


def _verify_digest_call(
    journal: Mapping[str, Any], tool: str, digest: str, keys: Mapping[str, VerifyKey]
) -> bool:
    """A call receipt when the entry keeps only the digest of the arguments."""
    raw = journal.get("receipt")
    if not isinstance(raw, Mapping):
        return False
    receipt = Receipt.model_validate(raw)
    body = {k: v for k, v in journal.items() if k != "receipt"}
    return verify(receipt, {"journal": body, "tool": tool, "argumentsDigest": digest}, keys)


def _safely(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except (ValidationError, ValueError, TypeError, RecursionError):
        return False


def _flagged(body: Mapping[str, Any]) -> bool:
    intake = body.get("intake")
    return isinstance(intake, Mapping) and intake.get("status") == "unresolved"


def _problem(entry: str, detail: str) -> Problem:
    return Problem(entry=entry, check=Check.RECEIPT_INVALID, detail=detail)
