"""Every bit flipped in a shipped key's ``pinnedAt`` is detected (issue 26: all 28 byte flips an
outside attack got past the verifier were there). ``pinnedAt`` is the Recorder's signed word
(docs/run-record.md §3): a flip that leaves a time is ``PIN_SIGNATURE_INVALID``, any other also
``BAD_TIME`` or ``MALFORMED``. The D-881 known-answer record, every key and the directory pinned."""

from __future__ import annotations

import re
from pathlib import Path

from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record import verify_record
from hatp_journal.toolkit.signing import VerifyKey
from hatp_journal.toolkit.wire import PublicKey

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples" / "d881"
SERVERS = ("calendar", "crm", "email")


def key(name: str) -> VerifyKey:
    return VerifyKey.from_wire(PublicKey.model_validate_json((EXAMPLES / f"{name}.pub.json").read_bytes()))


def test_every_bit_flipped_in_a_pinned_at_is_detected_and_a_flip_that_leaves_a_time_is_an_unsigned_pin() -> (
    None
):
    data = (EXAMPLES / "run-record.json").read_bytes()
    recorder = key("recorder")
    pins = {
        "recorder_keys": {recorder.kid: recorder},
        "server_keys": {server: {key(server).kid: key(server)} for server in SERVERS},
        "directory": Directory.load(EXAMPLES / "directory.json"),
    }
    assert verify_record(data, **pins).ok
    values = [m.start(1) for m in re.finditer(rb'"pinnedAt":"([^"]*)"', data)]
    assert len(values) == len(SERVERS)

    undetected, still_times, unsigned = [], 0, 0
    for start in values:
        for where in range(start, start + len("2026-12-04T09:40:27Z")):
            for bit in range(8):
                flipped = bytearray(data)
                flipped[where] ^= 1 << bit
                report = verify_record(bytes(flipped), **pins)
                if report.ok:
                    undetected.append((where, bit))
                codes = report.codes()
                if codes == {"PIN_SIGNATURE_INVALID"}:
                    still_times += 1
                unsigned += "PIN_SIGNATURE_INVALID" in codes

    assert undetected == []
    assert still_times > 0  # flips the form alone can't see: only the pin's signature shows them
    assert unsigned >= still_times
