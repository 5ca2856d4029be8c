"""Every single-byte change anywhere in an exported Run Record is detected."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from record_helpers import TickingClock, answer_body, fill, pins, server_pins

from hatp_journal.recorder.record import Check, RunStore, verify_record
from hatp_journal.toolkit.signing import SigningKey

FLIPS = 10_000


def test_ten_thousand_random_byte_flips_are_each_detected(
    tmp_path: Path, recorder_key: SigningKey, server_key: SigningKey
) -> None:
    store = RunStore(tmp_path / "flips.db", recorder_key, checkpoint_every=10, clock=TickingClock())
    run = store.open_run(agent="sales-bot", principal="dana")
    fill(store, run.id, 19, server_key)
    store.append(run.id, "undo-outcome", answer_body(server_key))
    store.close_run(run.id)
    data = store.export(run.id, {"crm": [server_key.public]}).to_bytes()
    recorder, servers = pins(store), server_pins(server_key)
    assert verify_record(data, recorder_keys=recorder, server_keys=servers).ok

    rng = random.Random(881)  # deterministic: a failure names a reproducible flip
    undetected: list[tuple[int, int]] = []
    seen: Counter[str] = Counter()
    for _ in range(FLIPS):
        flipped = bytearray(data)
        where = rng.randrange(len(flipped))
        flipped[where] ^= rng.randrange(1, 256)
        report = verify_record(bytes(flipped), recorder_keys=recorder, server_keys=servers)
        if report.ok:
            undetected.append((where, flipped[where]))
        seen.update(report.codes())

    store.dispose()
    assert undetected == []
    # Both paths were exercised: flips that break the JSON and flips that only a check can see.
    assert seen[Check.MALFORMED] > 0
    assert {Check.HASH_MISMATCH, Check.BAD_CHECKPOINT_SIGNATURE, Check.KEY_SUBSTITUTED} <= set(seen)
