"""Each forgery of a Run Record as a function: the genuine export in, the export with one lie out.

Most are made by someone holding the Recorder's key, who re-chains and re-signs every checkpoint
(:func:`~hatp_journal.conformance.forgery_kit.rechain`): what catches them is a signature the forger
does not hold (a tool server's, an approver's) or a check the chain alone can't make. The list of
them, with the codes a verifier must report, is ``FORGERIES`` in ``conformance/forge.py``.
"""

from __future__ import annotations

import copy

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.conformance.forgery_kit import (
    Record,
    Signers,
    entry,
    rechain,
    sign_checkpoint,
    sign_pin,
)
from hatp_journal.toolkit.signing import SigningKey, answer_payload, digest_call_payload


def forged_call_receipt(record: Record, signers: Signers) -> Record:
    call = entry(record, "call")
    effect = call["body"]["journal"]["effect"]
    effect["summary"] = effect["summary"].replace("Won", "Lost")
    return rechain(record, signers.recorder)


def forged_check_answer(record: Record, signers: Signers) -> Record:
    checks = entry(record, "plan")["body"]["checks"]
    first = checks[sorted(checks)[0]]
    first["versionFound"] = "v99"
    return rechain(record, signers.recorder)


def forged_undo_answer(record: Record, signers: Signers) -> Record:
    answer = entry(record, "undo-outcome")["body"]["answer"]
    answer["sideEffects"] = ["nothing was sent to anyone"]
    return rechain(record, signers.recorder)


def approval_moved(record: Record, signers: Signers) -> Record:
    # The plan is rewritten (a step dropped) and its digest recomputed, so the plan itself is
    # consistent: the approval now sits on a plan its signer never saw.
    plan = entry(record, "plan")["body"]
    plan["plan"]["steps"] = plan["plan"]["steps"][:1]
    plan["planDigest"] = sha256_digest(plan["plan"])
    return rechain(record, signers.recorder)


def approver_signature_changed(record: Record, signers: Signers) -> Record:
    decision = entry(record, "decision", 2)["body"]
    stranger = SigningKey.generate()
    forged = stranger.sign({"approval": decision["approval"]}, decision["receipt"]["issuedAt"]).wire()
    decision["receipt"]["sig"] = forged["sig"]
    return rechain(record, signers.recorder)


def approval_without_the_role(record: Record, signers: Signers) -> Record:
    decision = entry(record, "decision", 2)["body"]
    principal = record["run"]["principal"]
    decision["approval"]["by"] = principal
    stamp = decision["approval"]["at"]
    decision["receipt"] = signers.people[principal].sign({"approval": decision["approval"]}, stamp).wire()
    return rechain(record, signers.recorder)


def rolled_back(record: Record, signers: Signers) -> Record:
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


def token_in_export(record: Record, signers: Signers) -> Record:
    journal = entry(record, "call")["body"]["journal"]
    journal["compensationToken"] = "ctk_" + "A" * 43
    return rechain(record, signers.recorder)


def edited_without_the_key(record: Record, signers: Signers) -> Record:
    entry(record, "call")["body"]["arguments"]["stage"] = "Lost"
    return record


def unknown_kind(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent")["kind"] = "backdoor"
    return rechain(record, signers.recorder)


def bad_time(record: Record, signers: Signers) -> Record:
    record["entries"][0]["time"] = record["entries"][0]["time"].replace("Z", "+00:00")
    return rechain(record, signers.recorder)


def server_key_substituted(record: Record, signers: Signers) -> Record:
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


def directory_rewritten(record: Record, signers: Signers) -> Record:
    for snapshot in record["directories"].values():
        for person in snapshot["people"]:
            person["roles"] = [*person["roles"], "human://acme.com/role/team-lead"]
    return record


def unresolved_summary_forged(record: Record, signers: Signers) -> Record:
    # The summary forged as in forged-call-receipt, and the call marked as one the Recorder could
    # not resolve at intake: its failed receipt is then flagged, never silently passed.
    call = entry(record, "call")
    effect = call["body"]["journal"]["effect"]
    effect["summary"] = effect["summary"].replace("Won", "Lost")
    call["body"]["intake"] = {**call["body"]["intake"], "status": "unresolved", "reason": "RECEIPT_INVALID"}
    return rechain(record, signers.recorder)


def mallory_in_a_refiled_directory(record: Record, signers: Signers) -> Record:
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


def lee_lost_the_role(record: Record, signers: Signers) -> Record:
    return record  # the genuine record: the lie is in the directory the verifier is handed


def directory_without_lees_role(directory: Record) -> Record:
    people = [
        {**person, "roles": []} if person["name"] == "Lee" else person for person in directory["people"]
    ]
    return {**directory, "people": people}


def arguments_rewritten_under_approval(record: Record, signers: Signers) -> Record:
    # The ask Lee approved now shows another recipient; its callDigest (which Lee signed) is kept.
    ask = entry(record, "ask")["body"]
    ask["arguments"]["to"] = ["ceo@rival.example"]
    ask["argumentsDigest"] = sha256_digest(ask["arguments"])
    return rechain(record, signers.recorder)


def receipt_replayed(record: Record, signers: Signers) -> Record:
    # The first call journaled again at the end, its server's receipt and all: a replayed call.
    first, last = record["entries"][0], record["entries"][-1]
    seq = last["seq"] + 1
    again = {**copy.deepcopy(first), "seq": seq, "id": f"e{seq}", "time": last["time"]}
    record["entries"].append(again)
    record["checkpoints"].append({**record["checkpoints"][-1], "size": seq, "reason": "export"})
    return rechain(record, signers.recorder)


def call_replayed_without_token(record: Record, signers: Signers) -> Record:
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


def receipts_of_another_run(record: Record, signers: Signers) -> Record:
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


def pinned_at_earlier(record: Record, signers: Signers) -> Record:
    # A server key's pinnedAt moved a day earlier, still a time: the Recorder's pin receipt kept.
    server = entry(record, "call")["body"]["server"]
    pinned = record["serverKeys"][server][0]
    day = int(pinned["pinnedAt"][8:10])
    pinned["pinnedAt"] = (
        f"{pinned['pinnedAt'][:8]}{day - 1 if day > 1 else day + 1:02d}{pinned['pinnedAt'][10:]}"
    )
    return record


def counted_yes(record: Record, signers: Signers) -> Record:
    entry(record, "decision")["body"]["counted"] = "yes"
    return rechain(record, signers.recorder)


def decision_naming_nothing(record: Record, signers: Signers) -> Record:
    entry(record, "decision")["body"]["ask"] = "e99"
    return rechain(record, signers.recorder)


def pinned_at_moved(record: Record, signers: Signers) -> Record:
    # One flipped bit in a server key's pinnedAt (nothing signs it): month 12 becomes 13.
    server = entry(record, "call")["body"]["server"]
    pinned = record["serverKeys"][server][0]
    pinned["pinnedAt"] = pinned["pinnedAt"][:5] + "13" + pinned["pinnedAt"][7:]
    return record


def plan_digest_kept(record: Record, signers: Signers) -> Record:
    plan = entry(record, "plan")["body"]
    plan["plan"]["steps"] = plan["plan"]["steps"][:1]
    return rechain(record, signers.recorder)


def malformed_entry(record: Record, signers: Signers) -> Record:
    entry(record, "undo-outcome")["seq"] = str(entry(record, "undo-outcome")["seq"])
    return rechain(record, signers.recorder)


def override_on_no_conflict(record: Record, signers: Signers) -> Record:
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


def chain_broken(record: Record, signers: Signers) -> Record:
    return rechain(record, signers.recorder, broken=entry(record, "plan")["id"])


def seq_skipped(record: Record, signers: Signers) -> Record:
    item = entry(record, "undo-intent", 2)
    item["seq"] += 1
    item["id"] = f"e{item['seq']}"
    return rechain(record, signers.recorder)


def id_changed(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent", 2)["id"] = "e99"
    return rechain(record, signers.recorder)


def entry_of_another_run(record: Record, signers: Signers) -> Record:
    entry(record, "undo-intent")["run"] = "run_" + "X" * 16
    return rechain(record, signers.recorder)


def checkpoint_signature_forged(record: Record, signers: Signers) -> Record:
    sign_checkpoint(record["checkpoints"][0], SigningKey.generate())
    return record


def checkpoint_size_down(record: Record, signers: Signers) -> Record:
    # A genuine head re-signed after a later one: a checkpoint going back in size.
    again = {
        **copy.deepcopy(record["checkpoints"][0]),
        "reason": "manual",
        "at": record["checkpoints"][-1]["at"],
    }
    sign_checkpoint(again, signers.recorder)
    record["checkpoints"].append(again)
    return record


def last_checkpoint_dropped(record: Record, signers: Signers) -> Record:
    record["checkpoints"] = record["checkpoints"][:-1]
    return record


def remedy_of_nothing(record: Record, signers: Signers) -> Record:
    entry(record, "call", 3)["body"]["remedies"] = "e99"
    return rechain(record, signers.recorder)
