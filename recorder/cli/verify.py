"""``hatp-recorder verify``: check an exported Run Record with the keys you pinned.

Exit codes: 0 the record verifies, 1 it fails (each problem printed with its code and entry; a
flagged one too, unless ``--accept-flagged``), 2 the command could not run (a key, directory or
head file that can't be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from hatp_journal._shared.text import shown
from hatp_journal.recorder.directory import Directory, DirectoryError
from hatp_journal.recorder.record import Checkpoint, verify_record
from hatp_journal.recorder.record.key_files import pinned_key
from hatp_journal.recorder.record.witness_checks import WitnessPins
from hatp_journal.toolkit.errors import KeyFileError
from hatp_journal.toolkit.signing import VerifyKey


def verify_command(args: argparse.Namespace) -> int:
    """Run ``verify`` for the parsed arguments of the command."""
    try:
        recorder = pinned_key(args.recorder_key) if args.recorder_key else None
        servers = _server_keys(args.server_key)
        directory = [Directory.load(path) for path in args.directory] or None
        head = _head(args.head) if args.head else None
        witnesses = _witnesses(args)
        with _open(args.file) as document:  # read one entry at a time: a record of any length fits
            report = verify_record(
                document,
                recorder_keys={recorder.kid: recorder} if recorder else None,
                server_keys=servers or None,
                directory=directory,
                latest_head=head,
                witnesses=witnesses,
            )
    except (KeyFileError, DirectoryError, OSError) as error:
        print(f"hatp-recorder: error: {error}", file=sys.stderr)
        return 2
    # A record file is anyone's text: each value is escaped, so none can pass for a line of the verdict.
    for problem in report.problems:
        print("\t".join(shown(str(cell)) for cell in (problem.entry or "-", problem.check, problem.detail)))
    for problem in report.flagged:
        cells = (problem.entry or "-", problem.check, f"flagged: {problem.detail}")
        print("\t".join(shown(str(cell)) for cell in cells))
    if report.trusted_from_file:
        trusted = "; ".join(report.trusted_from_file)
        print(shown(f"keys taken from the file: trust on first use ({trusted})"))
    if head is None and not (witnesses and witnesses.answers):
        print("no latest head given (--head): a rollback to an older signed head would not show")
    accepted = report.ok and (not report.flagged or args.accept_flagged)
    verdict = "ok" if accepted else "FAILED"
    if report.ok and report.flagged:
        verdict += f" ({len(report.flagged)} flagged{', accepted' if accepted else ''})"
    print(
        f"{verdict}: {report.entries} entries, {report.signed_size} signed, "
        f"{report.receipts_checked} signatures of tool servers checked"
    )
    return 0 if accepted else 1


def _open(file: Path) -> BinaryIO:
    try:
        return file.open("rb")
    except OSError as error:
        raise OSError(f"cannot read {file}: {error.strerror}") from None


def _server_keys(pins: list[str]) -> dict[str, dict[str, VerifyKey]]:
    """``NAME=KEY`` pins, several keys per server allowed."""
    keys: dict[str, dict[str, VerifyKey]] = {}
    for pin in pins:
        name, equals, path = pin.partition("=")
        if not equals or not name or not path:
            raise KeyFileError(f"--server-key wants NAME=KEY-FILE, got {pin!r}")
        key = pinned_key(Path(path))
        keys.setdefault(name, {})[key.kid] = key
    return keys


def _witnesses(args: argparse.Namespace) -> WitnessPins | None:
    """``--witness NAME=KEY`` pins, and what each ``--ask-witness NAME=URL`` answers now."""
    keys: dict[str, VerifyKey] = {}
    for pin in getattr(args, "witness", []):
        name, equals, path = pin.partition("=")
        if not equals or not name or not path:
            raise KeyFileError(f"--witness wants NAME=KEY-FILE, got {pin!r}")
        keys[name] = pinned_key(Path(path))
    asked = [pin.partition("=") for pin in getattr(args, "ask_witness", [])]
    for name, equals, url in asked:
        if not equals or not name or not url:
            raise KeyFileError(f"--ask-witness wants NAME=URL, got {name}{equals}{url!r}")
        if name not in keys:
            raise KeyFileError(f"--ask-witness {name}: pin its key too (--witness {name}=KEY-FILE)")
    if not keys:
        return None
    from hatp_journal.recorder.witness.asking import ask_witnesses  # lazy: only with --witness (HTTP client)

    answers = ask_witnesses(args.file, {name: url for name, _, url in asked}) if asked else {}
    return WitnessPins(keys=keys, answers=answers)


def _head(path: Path) -> Checkpoint:
    try:
        return Checkpoint.model_validate_json(path.read_bytes(), strict=True)
    except OSError as error:
        raise OSError(f"cannot read the head {path}: {error.strerror}") from None
    except ValidationError as error:
        raise KeyFileError(f"{path} is not a signed head (from `hatp-recorder head`): {error}") from None
