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

from hatp_journal.toolkit.canonical import canonical_bytes, sha256_digest
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


# -- re-chaining, as a holder of the Recorder's key would ---------------------------------------


def entry_hash(entry: Record) -> str:
    """``sha256:`` of the canonical bytes of every member but ``hash``."""
    hashed = {k: v for k, v in entry.items() if k != "hash"}
    return "sha256:" + hashlib.sha256(canonical_bytes(hashed)).hexdigest()


def genesis(run: Record) -> str:
    """The ``prevHash`` of entry 1."""
    fields = {"genesis": True, "run": run["id"], "agent": run["agent"], "principal": run["principal"]}
    return sha256_digest({**fields, "openedAt": run["openedAt"]})


def rechain(record: Record, recorder: SigningKey) -> Record:
    """Every hash and link recomputed, every checkpoint re-signed over the new heads."""
    previous = genesis(record["run"])
    heads = [previous]
    for entry in record["entries"]:
        entry["prevHash"] = previous
        entry["hash"] = previous = entry_hash(entry)
        heads.append(previous)
    for checkpoint in record["checkpoints"]:
        checkpoint["head"] = heads[checkpoint["size"]]
        payload = {k: checkpoint[k] for k in ("run", "size", "head", "at", "reason")}
        checkpoint["receipt"] = recorder.sign({"checkpoint": payload}, checkpoint["at"]).wire()
    return record


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
        "rolled-back", "cut back to an older genuine checkpoint", ("ROLLBACK",), _rolled_back, with_head=True
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
        ("HASH_MISMATCH", "RECEIPT_INVALID"),
        _edited_without_the_key,
    ),
    Forgery("unknown-kind", "an entry of a kind no Recorder writes", ("UNKNOWN_KIND",), _unknown_kind),
    Forgery("bad-time", "an entry time with an offset", ("BAD_TIME",), _bad_time),
    Forgery(
        "directory-rewritten",
        "everyone given the approver's role in the shipped directory",
        ("DIRECTORY_MISMATCH",),
        _directory_rewritten,
        codes_from_file=("DIRECTORY_MISMATCH", "DIRECTORY_MISSING"),
    ),
    Forgery(
        "server-key-substituted",
        "a made-up CRM key shipped, and everything the CRM signed re-signed with it",
        ("CHECK_RECEIPT_INVALID", "KEY_SUBSTITUTED", "RECEIPT_INVALID", "UNDO_RECEIPT_INVALID"),
        _server_key_substituted,
        codes_from_file=(),  # trust on first use can't see it: pin the servers' keys
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
        expected.append(_expectation(forgery.name, forgery.lie, forgery.codes, from_file, forgery.with_head))
    # A member named twice: hand-written, since a parsed object can't hold it.
    first_entry = genuine_bytes.index(b'"entries":[{') + len(b'"entries":[{')
    doubled = genuine_bytes[:first_entry] + b'"body":{},' + genuine_bytes[first_entry:]
    (out / "tampered" / "duplicate-member.json").write_bytes(doubled)
    codes = ("DUPLICATE_KEY", "NOT_CANONICAL")
    expected.append(_expectation("duplicate-member", "an entry names its body twice", codes, codes, False))
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
