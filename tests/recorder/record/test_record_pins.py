"""What a verifier pins is what it checks against, and call receipts are held to their place.

A directory pinned is never replaced by the file's: a decision naming another is
``DIRECTORY_NOT_PINNED`` and is judged by the pinned one; a run whose directory changed between
decisions verifies with each of its directories pinned. A call receipt signing a token another
entry's receipt signs is ``RECEIPT_REPLAYED``; one from a server whose clock runs late, or the same
read made twice, is not. A not-counted decision whose
signature fails is flagged, not a problem, and never silent.
"""

from __future__ import annotations

from typing import Any

from record_helpers import pins, server_pins

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey, b64url, call_payload, token_digest

LEE, KIM, ROLE = "human://acme.com/lee", "human://acme.com/kim", "human://acme.com/role/team-lead"
AT = "2026-11-04T09:30:00Z"


def person(id_: str, key: SigningKey, roles: list[str]) -> dict[str, Any]:
    return {"id": id_, "name": id_.rpartition("/")[2], "roles": roles, "publicKey": b64url(key.public.raw())}


def asked_and_decided(store: RunStore, run: str, by: SigningKey, who: str, directory: str, n: int) -> None:
    """An ask (its callDigest as the Recorder computes it) and a decision signed by ``who``."""
    arguments = {"deal": f"D-{n}", "stage": "Won"}
    call = {"server": "crm", "tool": "update_deal", "arguments": arguments}
    digest = sha256_digest(call)
    ask = store.append(
        run,
        "ask",
        {
            **call,
            "argumentsDigest": sha256_digest(arguments),
            "callDigest": digest,
            "approver": ROLE,
            "decideBy": AT,
        },
    )
    approval = {"ask": f"{run}/{ask.id}", "callDigest": digest, "decision": "approve", "by": who, "at": AT}
    receipt = by.sign({"approval": approval}, AT).wire()
    store.append(
        run,
        "decision",
        {"ask": ask.id, "approval": approval, "receipt": receipt, "directory": directory, "counted": True},
    )


def test_a_run_whose_directory_changed_verifies_with_each_directory_pinned_and_not_with_the_newest_alone(
    store: RunStore,
) -> None:
    lee, kim = SigningKey.generate(), SigningKey.generate()
    before = {"people": [person(LEE, lee, [ROLE])]}
    after = {"people": [person(LEE, lee, []), person(KIM, kim, [ROLE])]}  # Lee handed the role to Kim
    run = store.open_run(agent="sales-bot", principal="dana")
    asked_and_decided(store, run.id, lee, LEE, store.keep_directory(before), 1)
    asked_and_decided(store, run.id, kim, KIM, store.keep_directory(after), 2)
    store.close_run(run.id)
    exported = store.export(run.id).to_bytes()

    both = verify_record(exported, recorder_keys=pins(store), directory=[before, after])
    newest = verify_record(exported, recorder_keys=pins(store), directory=Directory.model_validate(after))
    trusting = verify_record(exported, recorder_keys=pins(store))

    assert both.ok, both.problems
    assert both.trusted_from_file == []
    assert [(p.entry, p.check.value) for p in newest.problems] == [
        ("e2", "DIRECTORY_NOT_PINNED"),
        ("e2", "APPROVER_NOT_AUTHORIZED"),  # judged by the pinned directory: Lee no longer holds it
    ]
    assert trusting.ok
    assert trusting.trusted_from_file == ["the directory as the file gives it"]


def test_a_not_counted_decision_whose_signature_fails_is_flagged_not_a_problem(store: RunStore) -> None:
    lee = SigningKey.generate()
    directory = {"people": [person(LEE, lee, [ROLE])]}
    run = store.open_run(agent="sales-bot", principal="dana")
    asked_and_decided(store, run.id, SigningKey.generate(), LEE, store.keep_directory(directory), 1)
    decision = store.entries(run.id)[-1]
    store.append(run.id, "decision", {**decision.body, "counted": False, "why": "APPROVAL_SIGNATURE_INVALID"})
    store.close_run(run.id)

    report = verify_record(store.export(run.id).to_bytes(), recorder_keys=pins(store), directory=directory)

    assert [(p.entry, p.check.value) for p in report.problems] == [("e2", "APPROVAL_SIGNATURE_INVALID")]
    assert [(p.entry, p.check.value) for p in report.flagged] == [("e3", "APPROVAL_SIGNATURE_INVALID")]


def signed_call(server_key: SigningKey, issued_at: str, n: int, *, token: bool = True) -> dict[str, Any]:
    arguments = {"deal": f"D-{n}"}
    journal: dict[str, Any] = {"protocol": "hatp-journal/0.3", "server": "crm", "read": not token}
    if token:
        journal["compensationTokenDigest"] = token_digest(f"ctk_{n}")
    journal["receipt"] = server_key.sign(call_payload(journal, "update_deal", arguments), issued_at).wire()
    return {"server": "crm", "tool": "update_deal", "arguments": arguments, "journal": journal}


def test_a_receipt_signing_a_token_already_signed_is_replayed_a_late_server_or_a_repeated_read_is_not(
    store: RunStore, server_key: SigningKey
) -> None:
    run = store.open_run(agent="sales-bot", principal="dana")  # the store's clock: 2026-11-04T09:00:01Z
    store.append(run.id, "call", signed_call(server_key, "2026-11-03T09:00:00Z", 1))  # a server a day late
    store.append(run.id, "call", signed_call(server_key, "2026-11-04T09:00:02Z", 2, token=False))
    store.append(run.id, "call", signed_call(server_key, "2026-11-04T09:00:02Z", 2, token=False))  # same read
    store.append(run.id, "call", signed_call(server_key, "2026-11-04T09:00:03Z", 3))
    store.append(run.id, "call", signed_call(server_key, "2026-11-04T09:00:03Z", 3))  # the same call again
    store.close_run(run.id)

    report = verify_record(
        store.export(run.id).to_bytes(), recorder_keys=pins(store), server_keys=server_pins(server_key)
    )

    assert store.export(run.id).run.opened_at == "2026-11-04T09:00:01Z"
    assert [(p.entry, p.check.value) for p in report.problems] == [("e5", "RECEIPT_REPLAYED")]
