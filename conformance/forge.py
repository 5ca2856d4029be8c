"""Forged Run Records, for testing a verifier: each one a genuine export with one lie in it.

A verifier of Run Records (``docs/run-record.md``) must catch each of these with the code named
beside it. Most forgeries are made by someone holding the Recorder's key, who can re-chain and
re-sign every checkpoint: what catches them is a signature the forger does not hold (a tool
server's, an approver's) or a check the chain alone can't make (the latest head, the directory).

``python -m hatp_journal.conformance.forge SOURCE OUT`` writes, from a workdir of the D-881 story
(``hatp-demo d881 --workdir SOURCE``), the genuine export, its public keys, the latest head and
every forgery with ``expected.json`` — the known-answer files published under ``docs/examples/``.
Only the toolkit is imported: the forgeries do not lean on the Recorder's code.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.conformance.forgeries import (
    approval_moved,
    approval_without_the_role,
    approver_signature_changed,
    arguments_rewritten_under_approval,
    bad_time,
    call_replayed_without_token,
    chain_broken,
    checkpoint_signature_forged,
    checkpoint_size_down,
    counted_yes,
    decision_naming_nothing,
    directory_rewritten,
    directory_without_lees_role,
    edited_without_the_key,
    entry_of_another_run,
    forged_call_receipt,
    forged_check_answer,
    forged_undo_answer,
    id_changed,
    last_checkpoint_dropped,
    lee_lost_the_role,
    malformed_entry,
    mallory_in_a_refiled_directory,
    override_on_no_conflict,
    pinned_at_earlier,
    pinned_at_moved,
    plan_digest_kept,
    receipt_replayed,
    receipts_of_another_run,
    remedy_of_nothing,
    rolled_back,
    seq_skipped,
    server_key_substituted,
    token_in_export,
    unknown_kind,
    unresolved_summary_forged,
)
from hatp_journal.conformance.forgery_kit import Forgery, Record, Signers
from hatp_journal.toolkit.signing import SigningKey

FORGERIES = (
    Forgery(
        "forged-call-receipt",
        "a call's summary changed, the server's receipt kept",
        ("RECEIPT_INVALID",),
        forged_call_receipt,
    ),
    Forgery(
        "forged-check-answer",
        "a check answer in the plan changed",
        ("CHECK_RECEIPT_INVALID",),
        forged_check_answer,
    ),
    Forgery(
        "forged-undo-answer",
        "an undo answer's side effects changed",
        ("UNDO_RECEIPT_INVALID",),
        forged_undo_answer,
    ),
    Forgery(
        "approval-moved",
        "the approved plan rewritten under its approval",
        ("APPROVAL_TARGET_MISMATCH",),
        approval_moved,
    ),
    Forgery(
        "approver-signature-changed",
        "the approval signed by a key not the approver's",
        ("APPROVAL_SIGNATURE_INVALID",),
        approver_signature_changed,
    ),
    Forgery(
        "approval-without-the-role",
        "the approval re-signed by someone without undo authority",
        ("APPROVER_NOT_AUTHORIZED",),
        approval_without_the_role,
    ),
    Forgery(
        "rolled-back",
        "cut back to an older genuine checkpoint",
        ("ROLLBACK",),
        rolled_back,
        with_head=True,
        rewrites_history=False,
    ),
    Forgery(
        "token-in-export",
        "a compensation token written into a call",
        ("RECEIPT_INVALID", "TOKEN_IN_RECORD"),
        token_in_export,
    ),
    Forgery(
        "edited-without-the-key",
        "a call's arguments edited, nothing re-chained",
        ("CALL_DIGEST_MISMATCH", "HASH_MISMATCH", "RECEIPT_INVALID"),
        edited_without_the_key,
        rewrites_history=False,
    ),
    Forgery("unknown-kind", "an entry of a kind no Recorder writes", ("UNKNOWN_KIND",), unknown_kind),
    Forgery("bad-time", "an entry time with an offset", ("BAD_TIME",), bad_time),
    Forgery(
        "directory-rewritten",
        "everyone given the approver's role in the shipped directory",
        ("DIRECTORY_MISMATCH",),
        directory_rewritten,
        codes_from_file=("DIRECTORY_MISMATCH", "DIRECTORY_MISSING"),
        rewrites_history=False,
    ),
    Forgery(
        "server-key-substituted",
        "a made-up CRM key shipped, and everything the CRM signed re-signed with it",
        ("CHECK_RECEIPT_INVALID", "KEY_SUBSTITUTED", "RECEIPT_INVALID", "UNDO_RECEIPT_INVALID"),
        server_key_substituted,
        codes_from_file=(),  # trust on first use can't see it: pin the servers' keys
    ),
    Forgery(
        "unresolved-summary-forged",
        "a call's summary changed and the call marked unresolved at intake",
        (),
        unresolved_summary_forged,
        flagged=("RECEIPT_INVALID",),
    ),
    Forgery(
        "mallory-in-a-refiled-directory",
        "Mallory added with the approver's role to a re-filed directory, every approval re-signed by her",
        ("APPROVAL_SIGNATURE_INVALID", "DIRECTORY_NOT_PINNED"),
        mallory_in_a_refiled_directory,
        codes_from_file=(),  # trust on first use can't see it: pin the directory
    ),
    Forgery(
        "lee-lost-the-role",
        "the genuine record, checked against a directory in which Lee no longer holds the role",
        ("APPROVER_NOT_AUTHORIZED", "DIRECTORY_NOT_PINNED"),
        lee_lost_the_role,
        codes_from_file=(),
        directory=directory_without_lees_role,
        rewrites_history=False,
    ),
    Forgery(
        "arguments-rewritten-under-approval",
        "the recipient of an approved email rewritten in its ask, the approval kept",
        ("CALL_DIGEST_MISMATCH",),
        arguments_rewritten_under_approval,
    ),
    Forgery(
        "receipt-replayed",
        "the first call journaled again at the end with its server's receipt",
        ("RECEIPT_REPLAYED",),
        receipt_replayed,
        rewrites_history=False,  # appended after the latest head: nothing before it changed
    ),
    Forgery("counted-yes", 'a decision\'s counted written "yes"', ("BAD_BODY",), counted_yes),
    Forgery(
        "decision-naming-nothing",
        "a decision that names an ask the run does not have",
        ("DECISION_UNKNOWN_TARGET",),
        decision_naming_nothing,
    ),
    Forgery(
        "pinned-at-moved",
        "a server key's pinnedAt made a month 13 (one flipped bit)",
        ("BAD_TIME", "PIN_SIGNATURE_INVALID"),
        pinned_at_moved,
        rewrites_history=False,
    ),
    Forgery(
        "pinned-at-earlier",
        "a server key's pinnedAt moved a day, still a time, the Recorder's pin receipt kept",
        ("PIN_SIGNATURE_INVALID",),
        pinned_at_earlier,
        rewrites_history=False,
    ),
    Forgery(
        "call-replayed-without-token",
        "the approved email, whose receipt signs no token, journaled again at the end with its receipt",
        ("RECEIPT_REPLAYED",),
        call_replayed_without_token,
        rewrites_history=False,  # appended after the latest head: nothing before it changed
    ),
    Forgery(
        "receipts-of-another-run",
        "a new run filed with the first two calls of this one, their servers' receipts and all",
        ("RECEIPT_MISPLACED",),
        receipts_of_another_run,
        rewrites_history=False,  # another run: its latest head is not this one's
    ),
    Forgery(
        "plan-digest-kept",
        "a step dropped from the plan, its planDigest left as it was",
        ("PLAN_DIGEST_MISMATCH",),
        plan_digest_kept,
    ),
    Forgery("malformed-entry", "an entry's seq written as a string", ("MALFORMED",), malformed_entry),
    Forgery(
        "override-on-no-conflict",
        "an override, signed by the approver, of a step that is no conflict of the plan",
        ("OVERRIDE_INVALID",),
        override_on_no_conflict,
    ),
    Forgery("chain-broken", "the plan's prevHash pointing nowhere", ("CHAIN_BROKEN",), chain_broken),
    Forgery("seq-skipped", "an entry numbered one further than the one before", ("SEQ_GAP",), seq_skipped),
    Forgery("id-changed", "an entry's id not e<seq>", ("ID_MISMATCH",), id_changed),
    Forgery("entry-of-another-run", "an entry naming another run", ("RUN_MISMATCH",), entry_of_another_run),
    Forgery(
        "checkpoint-signature-forged",
        "a checkpoint signed by a key not the Recorder's",
        ("BAD_CHECKPOINT_SIGNATURE",),
        checkpoint_signature_forged,
        rewrites_history=False,
    ),
    Forgery(
        "checkpoint-size-down",
        "an older genuine head signed again after a later one",
        ("CHECKPOINT_MISMATCH",),
        checkpoint_size_down,
        rewrites_history=False,
    ),
    Forgery(
        "last-checkpoint-dropped",
        "the last checkpoint removed: entries no checkpoint signs",
        ("UNSIGNED_TAIL",),
        last_checkpoint_dropped,
        rewrites_history=False,
    ),
    Forgery(
        "remedy-of-nothing",
        "a call said to remedy an entry the run does not have",
        ("REMEDY_UNKNOWN_ENTRY",),
        remedy_of_nothing,
    ),
)
"""Every forgery, in the order ``expected.json`` lists them (``duplicate-member`` is added by hand)."""


# -- writing the known-answer files ----------------------------------------------------------------


def write(source: Path, out: Path) -> list[dict[str, Any]]:
    """Write the genuine export of ``source`` (a D-881 workdir), its keys and every forgery."""
    genuine_bytes = (source / "run-record.json").read_bytes()
    genuine: Record = json.loads(genuine_bytes)
    directory = json.loads((source / "directory.json").read_text(encoding="utf-8"))
    people = {
        person["id"]: SigningKey.from_file(source / f"{person['name'].lower()}.key")
        for person in directory["people"]
    }
    signers = Signers(SigningKey.from_file(source / "recorder.key"), people)
    head = json.loads((source / "head.json").read_text(encoding="utf-8"))
    (out / "tampered").mkdir(parents=True, exist_ok=True)
    (out / "run-record.json").write_bytes(genuine_bytes)
    (out / "directory.json").write_text(json.dumps(directory, indent=2) + "\n", encoding="utf-8")
    (out / "head.json").write_text(json.dumps(head, indent=2) + "\n", encoding="utf-8")
    _write_key(out / "recorder.pub.json", signers.recorder)
    for server, keys in genuine["serverKeys"].items():
        public = {k: keys[0][k] for k in ("alg", "kid", "publicKey")}
        (out / f"{server}.pub.json").write_text(json.dumps(public, indent=2) + "\n", encoding="utf-8")
    expected: list[dict[str, Any]] = []
    for forgery in FORGERIES:
        forged = forgery.forge(copy.deepcopy(genuine), signers)
        (out / "tampered" / f"{forgery.name}.json").write_bytes(canonical_bytes(forged))
        from_file = forgery.codes if forgery.codes_from_file is None else forgery.codes_from_file
        item = _expectation(forgery.name, forgery.lie, forgery.codes, from_file, forgery.with_head)
        item["flagged"] = sorted(forgery.flagged)
        item["rewritesHistory"] = forgery.rewrites_history
        if forgery.directory is not None:
            pinned = f"{forgery.name}.directory.json"
            text = json.dumps(forgery.directory(copy.deepcopy(directory)), indent=2) + "\n"
            (out / "tampered" / pinned).write_text(text, encoding="utf-8")
            item["directory"] = pinned
        expected.append(item)
    # A member named twice: hand-written, since a parsed object can't hold it.
    first_entry = genuine_bytes.index(b'"entries":[{') + len(b'"entries":[{')
    doubled = genuine_bytes[:first_entry] + b'"body":{},' + genuine_bytes[first_entry:]
    (out / "tampered" / "duplicate-member.json").write_bytes(doubled)
    codes = ("DUPLICATE_KEY", "NOT_CANONICAL")
    expected.append(_expectation("duplicate-member", "an entry names its body twice", codes, codes, False))
    # The same record written by another JSON encoder: equal values, other bytes.
    reencoded = {
        "re-encoded-escapes": json.dumps(genuine, sort_keys=True, separators=(",", ":")).encode("ascii"),
        "re-encoded-sorted": json.dumps(genuine, sort_keys=True).encode("ascii"),
    }
    lies = {
        "re-encoded-escapes": "written with \\uXXXX escapes for every non-ASCII character",
        "re-encoded-sorted": "written by json.dumps(sort_keys=True): escapes and spaces",
    }
    for name, data in reencoded.items():
        (out / "tampered" / f"{name}.json").write_bytes(data)
        expected.append(_expectation(name, lies[name], ("NOT_CANONICAL",), ("NOT_CANONICAL",), False))
    for item in expected:
        item.setdefault("flagged", [])
        item.setdefault("rewritesHistory", False)
    (out / "tampered" / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return expected


def _expectation(
    name: str, lie: str, codes: tuple[str, ...], from_file: tuple[str, ...], with_head: bool
) -> dict[str, Any]:
    return {
        "file": f"{name}.json",
        "lie": lie,
        "codes": sorted(codes),
        "codesFromFile": sorted(from_file),
        "withHead": with_head,
    }


def _write_key(path: Path, key: SigningKey) -> None:
    path.write_text(json.dumps(key.public.wire().wire(), indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``SOURCE OUT``."""
    parser = argparse.ArgumentParser(prog="python -m hatp_journal.conformance.forge", description=__doc__)
    parser.add_argument("source", type=Path, help="a D-881 workdir with run-record.json and head.json")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    for item in write(args.source, args.out):
        print(f"{item['file']}: {', '.join(item['codes'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
