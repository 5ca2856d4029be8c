"""``python -m hatp_journal.recorder.witness.forge OUT``: the known-answer files of witnessed heads.

A run of five entries whose heads the witness ``alpha`` cosigned, and the forgeries of
docs/run-record.md §10: a file cut back to an older cosigned head, a fork re-signed with the
Recorder's key (the witness is asked to cosign it and must refuse: this script stops if it does not)
carrying a forged cosignature, and the record without its cosignatures. Keys come from fixed seeds and
the clock is fixed, so the files are the same each time they are made.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.record.chain import seal
from hatp_journal.recorder.record.models import Checkpoint, Cosignature, Entry, RunRecordFile
from hatp_journal.recorder.record.store import RunStore
from hatp_journal.recorder.record.witnessed import keep_cosignature
from hatp_journal.recorder.witness.cosign import Refusal, Witness
from hatp_journal.recorder.witness.store import WitnessStore
from hatp_journal.recorder.witness.wire import CosignRequest, WitnessCode
from hatp_journal.toolkit.signing import SigningKey, b64url

RUN = "run_witnessed_example"
MOMENT = datetime(2026, 12, 4, 9, 0, 0, tzinfo=UTC)


def seeded_key(seed: str) -> SigningKey:
    """A key made from a fixed seed: the same files each time (never do this for a real key)."""
    return SigningKey(Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed.encode()).digest()))


def make(out: Path) -> None:
    """Write the known-answer files into ``out``."""
    recorder, alpha_key, forger = seeded_key("recorder"), seeded_key("alpha"), seeded_key("forger")
    with tempfile.TemporaryDirectory() as work:
        store = RunStore(Path(work) / "recorder.db", recorder, clock=lambda: MOMENT)
        witness = Witness("alpha", alpha_key, WitnessStore(Path(work) / "alpha.db"), clock=lambda: MOMENT)
        try:
            store.open_run(agent="bot", principal="human://acme.com/dana", run_id=RUN)
            for n in range(3):
                store.append(RUN, "note", {"text": f"note {n + 1}"})
            _cosigned(store, witness, store.checkpoint(RUN, "manual"), 0)
            truncated = store.export(RUN)
            for n in range(3, 5):
                store.append(RUN, "note", {"text": f"note {n + 1}"})
            _cosigned(store, witness, store.close_run(RUN), 3)
            whole = store.export(RUN)
            fork = _forked(whole, recorder)
            try:
                witness.cosign(RUN, _request(fork.checkpoints[-1], recorder, 4, [fork.entries[-1]]))
            except Refusal as refusal:
                if refusal.code != WitnessCode.WITNESS_NOT_EXTENDING:
                    raise
            else:
                raise SystemExit("the witness cosigned a fork")
            latest = witness.store.latest(RUN)
            assert latest is not None
        finally:
            store.dispose()
            witness.store.dispose()
    forged = [_forged(c, fork, forger) for c in whole.cosignatures or []]
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {
        "run-record.json": whole.to_bytes(),
        "truncated.json": truncated.to_bytes(),
        "forked.json": fork.model_copy(update={"cosignatures": forged}).to_bytes(),
        "cosignatures-dropped.json": whole.model_copy(update={"cosignatures": None}).to_bytes(),
        "recorder.pub.json": _json(recorder.public.wire().wire()),
        "alpha.pub.json": _json(alpha_key.public.wire().wire()),
        f"alpha/v1/runs/{RUN}/head": canonical_bytes(latest.wire()),
    }
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)


def _request(head: Checkpoint, key: SigningKey, since: int, entries: list[Entry]) -> CosignRequest:
    return CosignRequest(
        checkpoint=head,
        recorder_key=key.public.wire(),
        since=since,
        entries=[b64url(seal(entry.hashed())[0]) for entry in entries],
    )


def _cosigned(store: RunStore, witness: Witness, head: Checkpoint, since: int) -> None:
    entries = [bytes(data) for data in store.entry_bytes(RUN, since, head.size)]
    request = CosignRequest(
        checkpoint=head,
        recorder_key=store.public_key.wire(),
        since=since,
        entries=[b64url(data) for data in entries],
        run=store.run(RUN) if since == 0 else None,
    )
    keep_cosignature(store.engine, witness.cosign(RUN, request).cosignature)


def _forked(record: RunRecordFile, key: SigningKey) -> RunRecordFile:
    """The record with its last entry rewritten, re-chained and its last head re-signed."""
    last = record.entries[-1]
    hashed = {**last.hashed(), "body": {"text": "a note never written"}}
    _, digest = seal(hashed)
    entries = [*record.entries[:-1], Entry.model_validate({**hashed, "hash": digest})]
    head = record.checkpoints[-1]
    payload = Checkpoint.model_validate({**head.wire(), "head": digest}).signed()
    signed = head.model_copy(update={"head": digest, "receipt": key.sign(payload, head.at)})
    return record.model_copy(update={"entries": entries, "checkpoints": [*record.checkpoints[:-1], signed]})


def _forged(cosignature: Cosignature, fork: RunRecordFile, forger: SigningKey) -> Cosignature:
    """The fork's final head "cosigned" with a key not the witness's; earlier ones kept as they were."""
    head = fork.checkpoints[-1]
    if cosignature.size != head.size:
        return cosignature
    claimed = cosignature.model_copy(update={"head": head.head})
    receipt = forger.sign(claimed.signed(), cosignature.receipt.issued_at)
    return claimed.model_copy(update={"receipt": receipt})


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()


if __name__ == "__main__":
    make(Path(sys.argv[1]))
