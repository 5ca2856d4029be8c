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
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.toolkit.signing import SigningKey, answer_payload, digest_call_payload

Record = dict[str, Any]


@dataclass(frozen=True)
class Signers:
    """The private keys a forger may hold: always the Recorder's, sometimes a person's."""

    recorder: SigningKey
    people: dict[str, SigningKey]


@dataclass(frozen=True)
class Forgery:
    """One lie: how to tell it, and the codes a verifier must report for it."""

    name: str
    lie: str
    codes: tuple[str, ...]
    """What a verifier that pinned every key and the directory reports (``docs/run-record.md``)."""
    forge: Callable[[Record, Signers], Record]
    with_head: bool = False
    """The verifier is given the latest signed head (without it, the lie cannot show)."""
    codes_from_file: tuple[str, ...] | None = None
    """What a verifier that pinned nothing reports, where it differs (trust on first use)."""
    flagged: tuple[str, ...] = ()
    """Problems flagged, not counted: failures the Recorder itself recorded (shown, and failing the
    command line unless it is told to accept them)."""
    directory: Callable[[Record], Record] | None = None
    """The directory the verifier pins for this file, made from the genuine one (None: the genuine)."""
    rewrites_history: bool = True
    """Made by a holder of the Recorder's key (so, given the latest head, it is also ``ROLLBACK``)."""


# -- re-chaining, as a holder of the Recorder's key would ---------------------------------------


def entry_hash(entry: Record) -> str:
    """``sha256:`` of the canonical bytes of every member but ``hash``."""
    hashed = {k: v for k, v in entry.items() if k != "hash"}
    return "sha256:" + hashlib.sha256(canonical_bytes(hashed)).hexdigest()


def genesis(run: Record) -> str:
    """The ``prevHash`` of entry 1."""
    fields = {"genesis": True, "run": run["id"], "agent": run["agent"], "principal": run["principal"]}
    return sha256_digest({**fields, "openedAt": run["openedAt"]})


def rechain(record: Record, recorder: SigningKey, *, broken: str | None = None) -> Record:
    """Every hash and link recomputed, every checkpoint re-signed over the new heads (but the link
    into entry ``broken``, which is left pointing nowhere)."""
    previous = genesis(record["run"])
    heads = [previous]
    for entry in record["entries"]:
        entry["prevHash"] = "sha256:" + "0" * 64 if entry["id"] == broken else previous
        entry["hash"] = previous = entry_hash(entry)
        heads.append(previous)
    for checkpoint in record["checkpoints"]:
        checkpoint["head"] = heads[checkpoint["size"]]
        sign_checkpoint(checkpoint, recorder)
    return record


def sign_checkpoint(checkpoint: Record, key: SigningKey) -> None:
    payload = {k: checkpoint[k] for k in ("run", "size", "head", "at", "reason")}
    checkpoint["receipt"] = key.sign({"checkpoint": payload}, checkpoint["at"]).wire()


def sign_pin(server: str, key: Record, recorder: SigningKey) -> None:
    """The Recorder's receipt over a shipped key's pin, issued at its ``pinnedAt``."""
    pin = {"server": server, **{k: key[k] for k in ("alg", "kid", "publicKey", "pinnedAt")}}
    key["receipt"] = recorder.sign({"pin": pin}, key["pinnedAt"]).wire()


def entry(record: Record, kind: str, nth: int = 1) -> Record:
    """The ``nth`` entry of ``kind``."""
    found: Record = [e for e in record["entries"] if e["kind"] == kind][nth - 1]
    return found


# -- the forgeries -------------------------------------------------------------------------------


def _forged_call_receipt(record: Record, signers: Signers) -> Record:
    call = entry(record, "call")
    effect = call["body"]["journal"]["effect"]
    effect["summary"] = effect["summary"].replace("Won", "Lost")
    return rechain(record, signers.recorder)


def _forged_check_answer(record: Record, signers: Signers) -> Record:
    checks = entry(record, "plan")["body"]["checks"]
    first = checks[sorted(checks)[0]]
    first["versionFound"] = "v99"
    return rechain(record, signers.recorder)


def _forged_undo_answer(record: Record, signers: Signers) -> Record:
    answer = entry(record, "undo-outcome")["body"]["answer"]
    answer["sideEffects"] = ["nothing was sent to anyone"]
    return rechain(record, signers.recorder)


def _approval_moved(record: Record, signers: Signers) -> Record:
    # The plan is rewritten (a step dropped) and its digest recomputed, so the plan itself is
    # consistent: the approval now sits on a plan its signer never saw.
    plan = entry(record, "plan")["body"]
    plan["plan"]["steps"] = plan["plan"]["steps"][:1]
    plan["planDigest"] = sha256_digest(plan["plan"])
    return rechain(record, signers.recorder)


def _approver_signature_changed(record: Record, signers: Signers) -> Record:
    decision = entry(record, "decision", 2)["body"]
    stranger = SigningKey.generate()
    forged = stranger.sign({"approval": decision["approval"]}, decision["receipt"]["issuedAt"]).wire()
    decision["receipt"]["sig"] = forged["sig"]
    return rechain(record, signers.recorder)


def _approval_without_the_role(record: Record, signers: Signers) -> Record:
    decision = entry(record, "decision", 2)["body"]
    principal = record["run"]["principal"]
    decision["approval"]["by"] = principal
    stamp = decision["approval"]["at"]
    decision["receipt"] = signers.people[principal].sign({"approval": decision["approval"]}, stamp).wire()
    return rechain(record, signers.recorder)


def _rolled_back(record: Record, signers: Signers) -> Record:
    # A genuine older state: cut at the approval's checkpoint, nothing re-signed.
    cut = next(c["size"] for c in record["checkpoints"] if c["reason"] == "approval")
    record["entries"] = record["entries"][:cut]
    record["checkpoints"] = [c for c in record["checkpoints"] if c["size"] <= cut]
    closes = [c["at"] for c in record["checkpoints"] if c["reason"] == "close"]
    if closes:
        record["run"]["closedAt"] = closes[0]
    else:
        record["run"].pop("closedAt", None)
    return record


def _token_in_export(record: Record, signers: Signers) -> Record:
    journal = entry(record, "call")["body"]["journal"]
    journal["compensationToken"] = "ctk_" + "A" * 43
    return rechain(record, signers.recorder)


def _edited_without_the_key(record: Record, signers: Signers) -> Record:
    entry(record, "call")["body"]["arguments"]["stage"] = "Lost"
    return record


def _unknown_kind(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent")["kind"] = "backdoor"
    return rechain(record, signers.recorder)


def _bad_time(record: Record, signers: Signers) -> Record:
    record["entries"][0]["time"] = record["entries"][0]["time"].replace("Z", "+00:00")
    return rechain(record, signers.recorder)


def _server_key_substituted(record: Record, signers: Signers) -> Record:
    # A holder of the Recorder's key makes up a key for the CRM and re-signs everything it signed.
    mallory = SigningKey.generate()
    server = entry(record, "call")["body"]["server"]
    record["serverKeys"][server] = [{**mallory.public.wire().wire(), "pinnedAt": record["run"]["openedAt"]}]
    sign_pin(server, record["serverKeys"][server][0], signers.recorder)
    steps = {e["id"] for e in record["entries"] if e["kind"] == "call" and e["body"].get("server") == server}
    for item in record["entries"]:
        body = item["body"]
        if item["id"] in steps:
            journal = body["journal"]
            payload = digest_call_payload(journal, body["tool"], body["argumentsDigest"])
            journal["receipt"] = mallory.sign(payload, journal["receipt"]["issuedAt"]).wire()
        answers = [
            *(answer for step, answer in body.get("checks", {}).items() if step in steps),
            *([body["answer"]] if body.get("step") in steps and "answer" in body else []),
            *(
                line["receipt"]
                for line in body.get("steps", [])
                if line.get("entry") in steps and "receipt" in line
            ),
        ]
        for answer in answers:
            answer["receipt"] = mallory.sign(answer_payload(answer), answer["receipt"]["issuedAt"]).wire()
    return rechain(record, signers.recorder)


def _directory_rewritten(record: Record, signers: Signers) -> Record:
    for snapshot in record["directories"].values():
        for person in snapshot["people"]:
            person["roles"] = [*person["roles"], "human://acme.com/role/team-lead"]
    return record


def _unresolved_summary_forged(record: Record, signers: Signers) -> Record:
    # The summary forged as in forged-call-receipt, and the call marked as one the Recorder could
    # not resolve at intake: its failed receipt is then flagged, never silently passed.
    call = entry(record, "call")
    effect = call["body"]["journal"]["effect"]
    effect["summary"] = effect["summary"].replace("Won", "Lost")
    call["body"]["intake"] = {**call["body"]["intake"], "status": "unresolved", "reason": "RECEIPT_INVALID"}
    return rechain(record, signers.recorder)


def _mallory_in_a_refiled_directory(record: Record, signers: Signers) -> Record:
    # Mallory (her own key, the approver's role) filed into a new directory, and every decision
    # moved to it and re-signed by her: the file is consistent, only a pinned directory shows it.
    mallory = SigningKey.generate()
    (old,) = record["directories"].values()
    person = {
        "id": "human://acme.com/mallory",
        "name": "Mallory",
        "roles": ["human://acme.com/role/team-lead"],
    }
    refiled = {"people": [*old["people"], {**person, "publicKey": mallory.public.wire().public_key}]}
    digest = sha256_digest(refiled)
    record["directories"] = {digest: refiled}
    for item in record["entries"]:
        if item["kind"] != "decision":
            continue
        body = item["body"]
        body["directory"] = digest
        body["approval"]["by"] = person["id"]
        body["receipt"] = mallory.sign({"approval": body["approval"]}, body["receipt"]["issuedAt"]).wire()
        for override in body.get("overrides", []):
            override["override"]["by"] = person["id"]
            stamp = override["receipt"]["issuedAt"]
            override["receipt"] = mallory.sign({"override": override["override"]}, stamp).wire()
    return rechain(record, signers.recorder)


def _lee_lost_the_role(record: Record, signers: Signers) -> Record:
    return record  # the genuine record: the lie is in the directory the verifier is handed


def _directory_without_lees_role(directory: Record) -> Record:
    people = [
        {**person, "roles": []} if person["name"] == "Lee" else person for person in directory["people"]
    ]
    return {**directory, "people": people}


def _arguments_rewritten_under_approval(record: Record, signers: Signers) -> Record:
    # The ask Lee approved now shows another recipient; its callDigest (which Lee signed) is kept.
    ask = entry(record, "ask")["body"]
    ask["arguments"]["to"] = ["ceo@rival.example"]
    ask["argumentsDigest"] = sha256_digest(ask["arguments"])
    return rechain(record, signers.recorder)


def _receipt_replayed(record: Record, signers: Signers) -> Record:
    # The first call journaled again at the end, its server's receipt and all: a replayed call.
    first, last = record["entries"][0], record["entries"][-1]
    seq = last["seq"] + 1
    again = {**copy.deepcopy(first), "seq": seq, "id": f"e{seq}", "time": last["time"]}
    record["entries"].append(again)
    record["checkpoints"].append({**record["checkpoints"][-1], "size": seq, "reason": "export"})
    return rechain(record, signers.recorder)


def _call_replayed_without_token(record: Record, signers: Signers) -> Record:
    # The approved email (a call whose receipt signs no token) journaled again at the end, with its
    # server's receipt: only the call binding the receipt signs tells it from a second email.
    calls = [e for e in record["entries"] if e["kind"] == "call"]
    [email] = [e for e in calls if "compensationTokenDigest" not in e["body"]["journal"]]
    last = record["entries"][-1]
    seq = last["seq"] + 1
    again = {**copy.deepcopy(email), "seq": seq, "id": f"e{seq}", "time": last["time"]}
    record["entries"].append(again)
    record["checkpoints"].append({**record["checkpoints"][-1], "size": seq, "reason": "export"})
    return rechain(record, signers.recorder)


def _receipts_of_another_run(record: Record, signers: Signers) -> Record:
    # A holder of the Recorder's key files a new run made of this run's first two calls, their
    # servers' receipts and all: a record of calls that were never made in that run.
    other = "run_" + "Y" * 16
    calls = record["entries"][:2]
    for item in calls:
        item["run"] = other
    record["run"] = {**record["run"], "id": other}
    record["run"].pop("closedAt", None)
    record["entries"] = calls
    last = record["checkpoints"][0]
    record["checkpoints"] = [{**last, "run": other, "size": 2, "at": calls[-1]["time"], "reason": "export"}]
    record["directories"] = {}
    return rechain(record, signers.recorder)


def _pinned_at_earlier(record: Record, signers: Signers) -> Record:
    # A server key's pinnedAt moved a day earlier, still a time: the Recorder's pin receipt kept.
    server = entry(record, "call")["body"]["server"]
    pinned = record["serverKeys"][server][0]
    day = int(pinned["pinnedAt"][8:10])
    pinned["pinnedAt"] = (
        f"{pinned['pinnedAt'][:8]}{day - 1 if day > 1 else day + 1:02d}{pinned['pinnedAt'][10:]}"
    )
    return record


def _counted_yes(record: Record, signers: Signers) -> Record:
    entry(record, "decision")["body"]["counted"] = "yes"
    return rechain(record, signers.recorder)


def _decision_naming_nothing(record: Record, signers: Signers) -> Record:
    entry(record, "decision")["body"]["ask"] = "e99"
    return rechain(record, signers.recorder)


def _pinned_at_moved(record: Record, signers: Signers) -> Record:
    # One flipped bit in a server key's pinnedAt (nothing signs it): month 12 becomes 13.
    server = entry(record, "call")["body"]["server"]
    pinned = record["serverKeys"][server][0]
    pinned["pinnedAt"] = pinned["pinnedAt"][:5] + "13" + pinned["pinnedAt"][7:]
    return record


def _plan_digest_kept(record: Record, signers: Signers) -> Record:
    plan = entry(record, "plan")["body"]
    plan["plan"]["steps"] = plan["plan"]["steps"][:1]
    return rechain(record, signers.recorder)


def _malformed_entry(record: Record, signers: Signers) -> Record:
    entry(record, "undo-outcome")["seq"] = str(entry(record, "undo-outcome")["seq"])
    return rechain(record, signers.recorder)


def _override_on_no_conflict(record: Record, signers: Signers) -> Record:
    # The approver's own key signs an override of a step that is no conflict of the plan.
    decision = entry(record, "decision", 2)["body"]
    approval = decision["approval"]
    choice = {k: approval[k] for k in ("plan", "planDigest", "by", "at")}
    choice |= {"step": entry(record, "call")["id"], "versionFound": "v1"}
    lee = signers.people[approval["by"]]
    decision["overrides"] = [
        {"override": choice, "receipt": lee.sign({"override": choice}, approval["at"]).wire()}
    ]
    return rechain(record, signers.recorder)


def _chain_broken(record: Record, signers: Signers) -> Record:
    return rechain(record, signers.recorder, broken=entry(record, "plan")["id"])


def _seq_skipped(record: Record, signers: Signers) -> Record:
    item = entry(record, "undo-intent", 2)
    item["seq"] += 1
    item["id"] = f"e{item['seq']}"
    return rechain(record, signers.recorder)


def _id_changed(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent", 2)["id"] = "e99"
    return rechain(record, signers.recorder)


def _entry_of_another_run(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent")["run"] = "run_" + "X" * 16
    return rechain(record, signers.recorder)


def _checkpoint_signature_forged(record: Record, signers: Signers) -> Record:
    sign_checkpoint(record["checkpoints"][0], SigningKey.generate())
    return record


def _checkpoint_size_down(record: Record, signers: Signers) -> Record:
    # A genuine head re-signed after a later one: a checkpoint going back in size.
    again = {
        **copy.deepcopy(record["checkpoints"][0]),
        "reason": "manual",
        "at": record["checkpoints"][-1]["at"],
    }
    sign_checkpoint(again, signers.recorder)
    record["checkpoints"].append(again)
    return record


def _last_checkpoint_dropped(record: Record, signers: Signers) -> Record:
    record["checkpoints"] = record["checkpoints"][:-1]
    return record


def _remedy_of_nothing(record: Record, signers: Signers) -> Record:
    entry(record, "call", 3)["body"]["remedies"] = "e99"
    return rechain(record, signers.recorder)


FORGERIES = (
    Forgery(
        "forged-call-receipt",
        "a call's summary changed, the server's receipt kept",
        ("RECEIPT_INVALID",),
        _forged_call_receipt,
    ),
    Forgery(
        "forged-check-answer",
        "a check answer in the plan changed",
        ("CHECK_RECEIPT_INVALID",),
        _forged_check_answer,
    ),
    Forgery(
        "forged-undo-answer",
        "an undo answer's side effects changed",
        ("UNDO_RECEIPT_INVALID",),
        _forged_undo_answer,
    ),
    Forgery(
        "approval-moved",
        "the approved plan rewritten under its approval",
        ("APPROVAL_TARGET_MISMATCH",),
        _approval_moved,
    ),
    Forgery(
        "approver-signature-changed",
        "the approval signed by a key not the approver's",
        ("APPROVAL_SIGNATURE_INVALID",),
        _approver_signature_changed,
    ),
    Forgery(
        "approval-without-the-role",
        "the approval re-signed by someone without undo authority",
        ("APPROVER_NOT_AUTHORIZED",),
        _approval_without_the_role,
    ),
    Forgery(
        "rolled-back",
        "cut back to an older genuine checkpoint",
        ("ROLLBACK",),
        _rolled_back,
        with_head=True,
        rewrites_history=False,
    ),
    Forgery(
        "token-in-export",
        "a compensation token written into a call",
        ("RECEIPT_INVALID", "TOKEN_IN_RECORD"),
        _token_in_export,
    ),
    Forgery(
        "edited-without-the-key",
        "a call's arguments edited, nothing re-chained",
        ("CALL_DIGEST_MISMATCH", "HASH_MISMATCH", "RECEIPT_INVALID"),
        _edited_without_the_key,
        rewrites_history=False,
    ),
    Forgery("unknown-kind", "an entry of a kind no Recorder writes", ("UNKNOWN_KIND",), _unknown_kind),
    Forgery("bad-time", "an entry time with an offset", ("BAD_TIME",), _bad_time),
    Forgery(
        "directory-rewritten",
        "everyone given the approver's role in the shipped directory",
        ("DIRECTORY_MISMATCH",),
        _directory_rewritten,
        codes_from_file=("DIRECTORY_MISMATCH", "DIRECTORY_MISSING"),
        rewrites_history=False,
    ),
    Forgery(
        "server-key-substituted",
        "a made-up CRM key shipped, and everything the CRM signed re-signed with it",
        ("CHECK_RECEIPT_INVALID", "KEY_SUBSTITUTED", "RECEIPT_INVALID", "UNDO_RECEIPT_INVALID"),
        _server_key_substituted,
        codes_from_file=(),  # trust on first use can't see it: pin the servers' keys
    ),
    Forgery(
        "unresolved-summary-forged",
        "a call's summary changed and the call marked unresolved at intake",
        (),
        _unresolved_summary_forged,
        flagged=("RECEIPT_INVALID",),
    ),
    Forgery(
        "mallory-in-a-refiled-directory",
        "Mallory added with the approver's role to a re-filed directory, every approval re-signed by her",
        ("APPROVAL_SIGNATURE_INVALID", "DIRECTORY_NOT_PINNED"),
        _mallory_in_a_refiled_directory,
        codes_from_file=(),  # trust on first use can't see it: pin the directory
    ),
    Forgery(
        "lee-lost-the-role",
        "the genuine record, checked against a directory in which Lee no longer holds the role",
        ("APPROVER_NOT_AUTHORIZED", "DIRECTORY_NOT_PINNED"),
        _lee_lost_the_role,
        codes_from_file=(),
        directory=_directory_without_lees_role,
        rewrites_history=False,
    ),
    Forgery(
        "arguments-rewritten-under-approval",
        "the recipient of an approved email rewritten in its ask, the approval kept",
        ("CALL_DIGEST_MISMATCH",),
        _arguments_rewritten_under_approval,
    ),
    Forgery(
        "receipt-replayed",
        "the first call journaled again at the end with its server's receipt",
        ("RECEIPT_REPLAYED",),
        _receipt_replayed,
        rewrites_history=False,  # appended after the latest head: nothing before it changed
    ),
    Forgery("counted-yes", 'a decision\'s counted written "yes"', ("BAD_BODY",), _counted_yes),
    Forgery(
        "decision-naming-nothing",
        "a decision that names an ask the run does not have",
        ("DECISION_UNKNOWN_TARGET",),
        _decision_naming_nothing,
    ),
    Forgery(
        "pinned-at-moved",
        "a server key's pinnedAt made a month 13 (one flipped bit)",
        ("BAD_TIME", "PIN_SIGNATURE_INVALID"),
        _pinned_at_moved,
        rewrites_history=False,
    ),
    Forgery(
        "pinned-at-earlier",
        "a server key's pinnedAt moved a day, still a time, the Recorder's pin receipt kept",
        ("PIN_SIGNATURE_INVALID",),
        _pinned_at_earlier,
        rewrites_history=False,
    ),
    Forgery(
        "call-replayed-without-token",
        "the approved email, whose receipt signs no token, journaled again at the end with its receipt",
        ("RECEIPT_REPLAYED",),
        _call_replayed_without_token,
        rewrites_history=False,  # appended after the latest head: nothing before it changed
    ),
    Forgery(
        "receipts-of-another-run",
        "a new run filed with the first two calls of this one, their servers' receipts and all",
        ("RECEIPT_MISPLACED",),
        _receipts_of_another_run,
        rewrites_history=False,  # another run: its latest head is not this one's
    ),
    Forgery(
        "plan-digest-kept",
        "a step dropped from the plan, its planDigest left as it was",
        ("PLAN_DIGEST_MISMATCH",),
        _plan_digest_kept,
    ),
    Forgery("malformed-entry", "an entry's seq written as a string", ("MALFORMED",), _malformed_entry),
    Forgery(
        "override-on-no-conflict",
        "an override, signed by the approver, of a step that is no conflict of the plan",
        ("OVERRIDE_INVALID",),
        _override_on_no_conflict,
    ),
    Forgery("chain-broken", "the plan's prevHash pointing nowhere", ("CHAIN_BROKEN",), _chain_broken),
    Forgery("seq-skipped", "an entry numbered one further than the one before", ("SEQ_GAP",), _seq_skipped),
    Forgery("id-changed", "an entry's id not e<seq>", ("ID_MISMATCH",), _id_changed),
    Forgery("entry-of-another-run", "an entry naming another run", ("RUN_MISMATCH",), _entry_of_another_run),
    Forgery(
        "checkpoint-signature-forged",
        "a checkpoint signed by a key not the Recorder's",
        ("BAD_CHECKPOINT_SIGNATURE",),
        _checkpoint_signature_forged,
        rewrites_history=False,
    ),
    Forgery(
        "checkpoint-size-down",
        "an older genuine head signed again after a later one",
        ("CHECKPOINT_MISMATCH",),
        _checkpoint_size_down,
        rewrites_history=False,
    ),
    Forgery(
        "last-checkpoint-dropped",
        "the last checkpoint removed: entries no checkpoint signs",
        ("UNSIGNED_TAIL",),
        _last_checkpoint_dropped,
        rewrites_history=False,
    ),
    Forgery(
        "remedy-of-nothing",
        "a call said to remedy an entry the run does not have",
        ("REMEDY_UNKNOWN_ENTRY",),
        _remedy_of_nothing,
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
