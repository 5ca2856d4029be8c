"""Where verify's time goes, stage by stage, in CPU seconds (issue 28, item 3).

``verify_scale.py`` says how far verify on every core is from its floor (the signature checks
shared by the cores); this says what the rest is. It builds one run as ``verify_scale.py`` does,
reads it into memory once, then times, in this one process, each stage alone and the stages
added one at a time: reading the entries from the file, the envelope (lean parse, chain, hash),
the bodies' checks with no signature prepared, then with every signature prepared (canonical
payload, receipt) but not checked, then checked (Ed25519).
Best of ``--rounds``, CPU seconds (``time.process_time``): a loaded machine inflates them less
than the wall clock. ``--profile`` also prints cProfile's top functions of the bodies' stage.

What the parent process does while the workers check signatures is everything but Ed25519, so
verify's best wall time is about max(parent, (parent + Ed25519) ÷ cores); the floor is the checks
(their preparation and Ed25519) ÷ cores.

Run: ``.venv/bin/python bench/verify_stages.py [--entries 20000] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hatp_journal.recorder.record import bodies as bodies_module
from hatp_journal.recorder.record.entry_envelope import lean_entry
from hatp_journal.recorder.record.key_files import pinned_key
from hatp_journal.recorder.record.report import Findings
from hatp_journal.recorder.record.stream import ExportReader
from hatp_journal.recorder.record.verify import RecordVerifier, _header

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verify_scale import prepare


def best(rounds: int, work: Callable[[], object]) -> float:
    """The least CPU seconds ``work`` took in ``rounds`` runs."""
    taken = []
    for _ in range(rounds):
        start = time.process_time()
        work()
        taken.append(time.process_time() - start)
    return min(taken)


def stages(folder: Path, rounds: int, profile: bool) -> list[tuple[str, float]]:
    """Each stage's CPU seconds over the run in ``folder`` (its export and pinned keys)."""
    export = folder / "export.json"

    def read() -> None:
        with export.open("rb") as file:
            for _ in ExportReader(file).entries():
                pass  # as verify reads them: one at a time, none kept

    with export.open("rb") as file:
        entries = list(ExportReader(file).entries())
    with export.open("rb") as file:
        header = _header(ExportReader(file).header, Findings())
    assert header is not None
    crm = pinned_key(folder / "crm.pub")
    recorder = pinned_key(folder / "recorder.pub")

    def unprepared() -> None:
        """The bodies' checks with no signature prepared either (each counted as valid)."""
        names = ("call_task", "digest_call_task", "answer_task", "_signed_task")
        kept = {name: getattr(bodies_module, name) for name in names}
        for name in names:
            setattr(bodies_module, name, lambda *args, **kwargs: None)
        try:
            verifier(True, False, valid=lambda task: True)
        finally:
            for name, function in kept.items():
                setattr(bodies_module, name, function)

    def verifier(
        bodies: bool, ed25519: bool, valid: Callable[[Any], bool] = lambda task: task is not None
    ) -> None:
        checking = RecordVerifier(
            header, Findings(), {recorder.kid: recorder}, {"crm": {crm.kid: crm}}, None, None
        )
        if not bodies:
            checking.bodies.check = lambda entry, stored=None: None  # type: ignore[method-assign]
        elif not ed25519:
            checking.bodies.signatures.check = lambda task, then: then(valid(task))  # type: ignore[method-assign]
        for raw, stored in entries:
            checking.entry(raw, stored)
        assert not checking.found.problems, checking.found.problems[:3]

    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(verifier, True, False)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return [
        ("reading the entries from the file", best(rounds, read)),
        (
            "  of which SHA-256 of the bytes hashed",
            best(rounds, lambda: [hashlib.sha256(s or b"") for _, s in entries]),
        ),
        ("lean envelope parse alone", best(rounds, lambda: [lean_entry(raw) for raw, _ in entries])),
        ("envelope checks (lean parse, seq, chain, hash)", best(rounds, lambda: verifier(False, False))),
        ("+ bodies, no signature prepared", best(rounds, unprepared)),
        ("+ bodies, signatures prepared, not checked", best(rounds, lambda: verifier(True, False))),
        ("+ Ed25519 (one core)", best(1, lambda: verifier(True, True))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile of the bodies' stage")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="verify-stages-") as workdir:
        folder = Path(workdir)
        run_id = prepare(folder, args.entries)
        from hatp_journal.recorder import cli

        config = ["--config", str(folder / "recorder.toml")]
        if cli.main([*config, "export", run_id, "--out", str(folder / "export.json")]) != 0:
            raise SystemExit("export failed")
        measured = stages(folder, args.rounds, args.profile)
    print(f"verify, stage by stage: {args.entries} entries, CPU seconds (best of {args.rounds}), one process")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, seconds in measured:
        print(f"  {label:<50}{seconds:>7.2f}  ({seconds / args.entries * 1e6:.0f} µs an entry)")


if __name__ == "__main__":
    main()
