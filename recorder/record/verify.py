"""Offline verification of an exported Run Record (``docs/run-record.md``).

Every signature in the record is checked: the Recorder's checkpoints (and the latest signed head
when the verifier holds one), the tool servers' call receipts, check answers and undo answers,
and every person's approval, denial and override against the directory of that moment. Each
problem has a stable code and names the entry; nothing in a malformed file makes verification
raise. What the verifier does not pin itself (the Recorder's key, a server's keys, a directory)
is taken from the file and listed in ``trusted_from_file``: trust on first use, said out loud.

Entries are checked one at a time, in order, keeping only what later entries refer to; an exported
file is read that way too (``stream.py``), so a record of any length is verified in little memory.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from pydantic import ValidationError

from hatp_journal._shared.canonical import sha256_digest
from hatp_journal.recorder.directory import Directory
from hatp_journal.recorder.record.bodies import BodyChecks, parse_directory
from hatp_journal.recorder.record.chain import entry_id, genesis_hash
from hatp_journal.recorder.record.checkpoint_checks import check_checkpoints, check_latest, check_pinned_at
from hatp_journal.recorder.record.entry_envelope import canonical_entry, lean_entry, rehash
from hatp_journal.recorder.record.gc_pause import gc_paused
from hatp_journal.recorder.record.layout import read_export
from hatp_journal.recorder.record.models import Checkpoint, Entry, RunRecordFile
from hatp_journal.recorder.record.report import Check, Findings, Problem, VerifyReport
from hatp_journal.recorder.record.signature_workers import POOL_AFTER
from hatp_journal.recorder.record.stream import ExportReader, NotLaidOut, TooLong
from hatp_journal.recorder.record.times import is_wire_time
from hatp_journal.recorder.record.witness_checks import WitnessCheck, WitnessPins
from hatp_journal.toolkit.signing import VerifyKey, b64url, b64url_decode

ServerKeys = Mapping[str, Mapping[str, VerifyKey]]
_UNKNOWN = "unknown: after a malformed entry"
COLLECT_EVERY = 10_000
"""Entries verified between two collections of cyclic garbage (the collector is paused meanwhile)."""
WHOLE_FILE_LIMIT = 16 << 20
"""Bytes up to which a file not laid out as the Recorder writes it is read whole, to say what is
wrong with it; a larger one is reported as not laid out so, and not read further."""


def verify_record(
    file: RunRecordFile | Mapping[str, Any] | bytes | str | os.PathLike[str] | BinaryIO,
    *,
    recorder_keys: Mapping[str, VerifyKey] | None = None,
    server_keys: ServerKeys | None = None,
    directory: Directory | Mapping[str, Any] | Sequence[Directory | Mapping[str, Any]] | None = None,
    latest_head: Checkpoint | Mapping[str, Any] | None = None,
    workers: int | None = None,
    pool_after: int = POOL_AFTER,
    witnesses: WitnessPins | None = None,
) -> VerifyReport:
    """Verify a Run Record offline.

    ``file`` is the model, its JSON object, the exported bytes (or their text), or the exported
    file: a path or a binary file object, read one entry at a time (``stream.py``), so a record
    of any length is verified in little memory. Bytes must also be the canonical bytes the
    Recorder wrote. ``recorder_keys`` (kid → key), ``server_keys`` (server → kid → key) and
    ``directory`` (one, or several: the directories of the moments the run's decisions were made,
    the newest last) are what the verifier pinned; whatever is not given is taken from the file and
    reported in ``trusted_from_file``. A pin is never replaced by what the file says: a decision
    naming a directory not pinned is checked against the newest pinned one. ``latest_head`` is a
    signed head held outside the Recorder's store; without it, a rollback to an older genuine
    checkpoint cannot be detected. ``witnesses`` pins witnesses' keys (the final head must carry a
    cosignature of each) and carries what those asked answered (``witness_checks.py``).
    Signatures are checked on ``workers`` other processes (None: one per core; 0: none) once more
    than ``pool_after`` were seen, so a small record never starts any; the report is the same.
    A file that cannot be read raises ``OSError``; nothing in its content makes this raise.
    """
    pinned = _Pinned(recorder_keys, server_keys, directory, latest_head, workers, pool_after, witnesses)
    if isinstance(file, os.PathLike):
        with open(file, "rb") as opened:
            return _verify_file(opened, pinned)
    if not isinstance(file, RunRecordFile | Mapping | bytes | str) and hasattr(file, "read"):
        return _verify_file(file, pinned)
    found = Findings()
    loaded = load_record(file, found)
    if loaded is None:
        return VerifyReport(ok=False, problems=found.problems)
    header, entries = loaded
    return _verify(header, entries, found, pinned)


@dataclass(frozen=True)
class _Pinned:
    """What the verifier holds itself (see :func:`verify_record`)."""

    recorder_keys: Mapping[str, VerifyKey] | None
    server_keys: ServerKeys | None
    directory: Directory | Mapping[str, Any] | Sequence[Directory | Mapping[str, Any]] | None
    latest_head: Checkpoint | Mapping[str, Any] | None
    workers: int | None = 0
    pool_after: int = POOL_AFTER
    witnesses: WitnessPins | None = None


def _verify(
    header: RunRecordFile, entries: Iterable[tuple[Any, bytes | None]], found: Findings, pinned: _Pinned
) -> VerifyReport:
    verifier = RecordVerifier(
        header,
        found,
        pinned.recorder_keys,
        pinned.server_keys,
        pinned.directory,
        pinned.latest_head,
        workers=pinned.workers,
        pool_after=pinned.pool_after,
    )
    verifier.witness_pins(pinned.witnesses)
    # The collector paused: while workers check signatures, entries wait for their verdicts long
    # enough to reach the oldest generation, and its walks took a fifth of this process's CPU.
    # Nothing here makes cycles as a rule; a collection every COLLECT_EVERY entries bounds any.
    try:
        with gc_paused():
            for count, (raw, stored) in enumerate(entries, 1):
                verifier.entry(raw, stored)
                if count % COLLECT_EVERY == 0:
                    gc.collect()
            return verifier.finish()
    finally:
        verifier.bodies.signatures.close()  # never leave a worker behind, whatever went wrong


def _verify_file(file: BinaryIO, pinned: _Pinned) -> VerifyReport:
    """Verify an exported file one entry at a time; one not laid out as the Recorder writes it is
    read whole, the slow way that says exactly what is wrong with it, if it is small enough."""
    if not file.seekable():
        with tempfile.TemporaryFile() as copy:
            shutil.copyfileobj(file, copy)
            return _verify_file(copy, pinned)
    try:
        reader = ExportReader(file)
        found = Findings()
        header = _header(reader.header, found)
        if header is None:
            for _ in reader.entries():
                pass  # the entries' layout problems go first, as read_export lists them
            report = VerifyReport(ok=False, problems=found.problems)
        else:
            report = _verify(header, reader.entries(), found, pinned)
    except NotLaidOut as error:
        size = file.seek(0, 2)
        if size > WHOLE_FILE_LIMIT:
            return VerifyReport(ok=False, problems=[_unread(error, size)])
        file.seek(0)
        found = Findings()
        loaded = load_record(file.read(), found)
        if loaded is None:
            return VerifyReport(ok=False, problems=found.problems)
        return _verify(*loaded, found, pinned)
    if not reader.findings.problems:
        return report
    return report.model_copy(update={"ok": False, "problems": [*reader.findings.problems, *report.problems]})


def _unread(error: NotLaidOut, size: int) -> Problem:
    """What is said of a large file that is not laid out as the Recorder writes it."""
    if error.not_utf8:
        return Problem(check=Check.MALFORMED, detail=f"not UTF-8 at byte {error.at}")
    return Problem(
        check=Check.NOT_CANONICAL,
        detail=f"not laid out as the Recorder writes it (at byte {error.at}: {error.why}); a file of "
        f"{size} bytes, over {WHOLE_FILE_LIMIT}, is only read that way, so nothing else was checked",
    )


def load_record(
    file: object, found: Findings
) -> tuple[RunRecordFile, Iterable[tuple[Any, bytes | None]]] | None:
    """The file's header (everything but its entries) and each raw entry with its stored bytes
    (``None`` when the file is not laid out canonically); None, with the problem, if unreadable."""
    if isinstance(file, RunRecordFile):
        raw: Any = file.wire()
        raw["entries"] = [entry.wire() for entry in file.entries]
        stored: list[bytes] | None = None
    elif isinstance(file, bytes | str):
        raw, stored = read_export(file, found)
        if found.problems and raw is None:
            return None
    else:
        raw, stored = file, None
    if not isinstance(raw, Mapping):
        found.add(Check.MALFORMED, None, "not a JSON object")
        return None
    entries = raw.get("entries")
    if not isinstance(entries, list):
        found.add(Check.MALFORMED, None, "entries: not a list")
        return None
    header = _header(raw, found)
    if header is None:
        return None
    if stored is None:
        return header, ((entry, None) for entry in entries)
    return header, zip(entries, stored, strict=True)


def _header(raw: Mapping[str, Any], found: Findings) -> RunRecordFile | None:
    """Everything in the file but its entries; None, and ``MALFORMED``, if it is not a Run Record's."""
    try:
        return RunRecordFile.model_validate({**raw, "entries": []}, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        found.add(Check.MALFORMED, None, f"{where or 'file'}: {first['msg']}")
        return None


class RecordVerifier:
    """One pass over a record's entries, in order, then its checkpoints (see :func:`verify_record`)."""

    def __init__(
        self,
        header: RunRecordFile,
        found: Findings,
        recorder_keys: Mapping[str, VerifyKey] | None,
        server_keys: ServerKeys | None,
        directory: Directory | Mapping[str, Any] | Sequence[Directory | Mapping[str, Any]] | None,
        latest_head: Checkpoint | Mapping[str, Any] | None,
        *,
        workers: int | None = 0,
        pool_after: int = POOL_AFTER,
    ) -> None:
        self.header = header
        self.found = found
        self.trusted: list[str] = []
        self.recorder_keys = self._recorder_keys(recorder_keys)
        self.latest = self._latest(latest_head)
        directories, pinned_directory = self._directories(directory)
        self.bodies = BodyChecks(
            header.run.id,
            self._server_keys(server_keys),
            directories,
            found,
            recorder_keys=self.recorder_keys,
            pinned_directory=pinned_directory,
            workers=workers,
            pool_after=pool_after,
        )
        # Heads are kept only at the sizes a checkpoint (or the latest head) signs.
        self.wanted = {c.size for c in header.checkpoints} | ({self.latest.size} if self.latest else set())
        self.heads: dict[int, str] = {}
        self.size = 0
        self.previous_hash: str | None = None
        self.earlier: set[str] = set()
        self._run_times()
        try:
            self.previous_hash = genesis_hash(header.run)
        except (ValueError, TypeError, RecursionError):
            found.add(Check.MALFORMED, None, "run fields are not canonical JSON")
        self.witnessed = WitnessCheck(header, None)
        if 0 in self.wanted and self.previous_hash:
            self.heads[0] = self.previous_hash

    def witness_pins(self, pins: WitnessPins | None) -> None:
        """Check the witnesses of ``pins`` too (before any entry is read: their sizes' heads are kept)."""
        self.witnessed = WitnessCheck(self.header, pins)
        self.wanted |= self.witnessed.sizes()
        if 0 in self.wanted and isinstance(self.previous_hash, str) and self.size == 0:
            self.heads[0] = self.previous_hash

    # -- keys and directories -----------------------------------------------------

    def _recorder_keys(self, pinned: Mapping[str, VerifyKey] | None) -> Mapping[str, VerifyKey]:
        shipped = self.header.recorder_key
        if pinned is not None and not _derived(shipped.kid, shipped.public_key):
            self.found.add(Check.MALFORMED, None, f"recorderKey: kid {shipped.kid!r} does not name its key")
        if pinned is None:
            self.trusted.append("the Recorder's key")
            try:
                return {shipped.kid: VerifyKey.from_wire(shipped)}
            except ValueError:
                self.found.add(Check.MALFORMED, None, "recorderKey is not a published Ed25519 key")
                return {}
        key = pinned.get(shipped.kid)
        if key is None or b64url(key.raw()) != shipped.public_key:
            self.found.add(
                Check.KEY_SUBSTITUTED, None, f"recorder key {shipped.kid!r} in the file is not pinned"
            )
        return pinned

    def _server_keys(self, pinned: ServerKeys | None) -> dict[str, Mapping[str, VerifyKey]]:
        """The pinned keys; without any, the file's (trust on first use). A verifier that pins
        servers pins them all: a shipped key it did not pin is reported, never used."""
        if pinned is not None:
            for server, shipped in self.header.server_keys.items():
                for key in shipped:
                    if not _derived(key.kid, key.public_key):
                        self.found.add(
                            Check.MALFORMED,
                            None,
                            f"serverKeys.{server}: kid {key.kid!r} does not name its key",
                        )
                    mine = pinned.get(server, {}).get(key.kid)
                    if mine is None or b64url(mine.raw()) != key.public_key:
                        self.found.add(
                            Check.KEY_SUBSTITUTED, None, f"key {key.kid!r} of {server!r} is not pinned"
                        )
            return dict(pinned)
        keys: dict[str, Mapping[str, VerifyKey]] = {}
        for server, shipped in self.header.server_keys.items():
            self.trusted.append(f"the keys of {server}")
            try:
                keys[server] = {key.kid: VerifyKey.from_wire(key.public()) for key in shipped}
            except ValueError:
                self.found.add(Check.MALFORMED, None, f"serverKeys.{server}: not published Ed25519 keys")
        return keys

    def _directories(
        self, given: Directory | Mapping[str, Any] | Sequence[Directory | Mapping[str, Any]] | None
    ) -> tuple[dict[str, Directory | None], Directory | None]:
        """The directories decisions are checked against, and the newest pinned one (if pinned).

        Pinned directories are the only ones used; the file's are then only checked to hash to
        the digest they are filed under. Without a pin, the file's are used: trust on first use.
        """
        pins: list[Directory] = []
        if given is not None:
            many = given if isinstance(given, Sequence) else [given]
            pins = [item if isinstance(item, Directory) else Directory.model_validate(item) for item in many]
        known: dict[str, Directory | None] = {sha256_digest(pin.snapshot()): pin for pin in pins}
        for digest, snapshot in self.header.directories.items():
            try:
                actual = sha256_digest(snapshot)
            except (ValueError, TypeError, RecursionError):
                actual = None
            if actual != digest:
                self.found.add(
                    Check.DIRECTORY_MISMATCH, None, f"the directory under {digest} does not hash to it"
                )
                continue
            if pins:
                continue
            known[digest] = parse_directory(snapshot)
            if known[digest] is None:
                self.found.add(Check.MALFORMED, None, f"directories.{digest}: not a directory")
        if known and not pins:
            self.trusted.append("the directory as the file gives it")
        return known, (pins[-1] if pins else None)

    def _latest(self, latest: Checkpoint | Mapping[str, Any] | None) -> Checkpoint | None:
        if latest is None:
            return None
        try:
            return (
                latest if isinstance(latest, Checkpoint) else Checkpoint.model_validate(latest, strict=True)
            )
        except ValidationError:
            self.found.add(Check.MALFORMED, None, "the latest head given is not a checkpoint")
            return None

    def _run_times(self) -> None:
        run = self.header.run
        for name, value in (("openedAt", run.opened_at), ("closedAt", run.closed_at)):
            if value is not None and not is_wire_time(value):
                self.found.add(Check.BAD_TIME, None, f"run {name} {value!r}")

    # -- entries ------------------------------------------------------------------

    def entry(self, raw: Any, stored: bytes | None) -> None:
        """Check the next entry: its place in the chain, then what it says."""
        self.size += 1
        label = entry_id(self.size)
        if isinstance(raw, TooLong):
            self._malformed(label, f"{raw.chars} characters, more than an entry may take: not read", None)
            return
        try:
            entry = lean_entry(raw) or Entry.model_validate(raw, strict=True)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            said = raw.get("hash") if isinstance(raw, Mapping) else None
            self._malformed(label, f"{where or 'entry'}: {first['msg']}", said)
            return
        label = entry.id
        run_id = self.header.run.id
        if entry.run != run_id:
            self.found.add(Check.RUN_MISMATCH, label, f"entry of run {entry.run!r} in run {run_id!r}")
        if entry.seq != self.size:
            self.found.add(Check.SEQ_GAP, label, f"seq {entry.seq} at position {self.size}")
        if entry.id != entry_id(entry.seq):
            self.found.add(Check.ID_MISMATCH, label, f"id {entry.id!r} at seq {entry.seq}")
        if not is_wire_time(entry.time):
            self.found.add(Check.BAD_TIME, label, f"entry time {entry.time!r}")
        recomputed = rehash(entry, stored)
        if stored is not None and recomputed and recomputed != entry.hash:
            # Bytes that hash to another value may be a re-encoding of the very same entry (escapes,
            # number spellings): that is NOT_CANONICAL, and the entry is hashed in canonical form.
            canonical = rehash(entry, None)
            if canonical and canonical_entry(entry) != stored:
                self.found.add(Check.NOT_CANONICAL, label, "the entry is not written in canonical form")
                recomputed = canonical
        if not recomputed:
            self.found.add(Check.MALFORMED, label, "entry is not canonical JSON")
        elif recomputed != entry.hash:
            self.found.add(Check.HASH_MISMATCH, label, "content does not hash to the recorded hash")
        if entry.prev_hash != self.previous_hash and self.previous_hash is not _UNKNOWN:
            self.found.add(Check.CHAIN_BROKEN, label, "prevHash is not the previous entry's hash")
        self._keep_head(recomputed or None)
        self.previous_hash = entry.hash
        self._check_remedy(entry)
        self.earlier.add(entry.id)
        self.bodies.check(entry, stored)

    def _malformed(self, label: str, detail: str, said: Any) -> None:
        self.found.add(Check.MALFORMED, label, detail)
        # Follow the chain through it by the hash it claims; the next link is not checked against
        # an entry already reported as malformed.
        self.previous_hash = said if isinstance(said, str) else _UNKNOWN
        self._keep_head(None)

    def _keep_head(self, head: str | None) -> None:
        if self.size in self.wanted:
            self.heads[self.size] = head or ""

    def _check_remedy(self, entry: Entry) -> None:
        """A remedy names the entry it fixes (``remedies: "e3"``), an earlier entry of this run."""
        fixes = entry.body.get("remedies")
        if fixes is not None and (not isinstance(fixes, str) or fixes not in self.earlier):
            self.found.add(
                Check.REMEDY_UNKNOWN_ENTRY, entry.id, f"remedies {fixes!r}, not an earlier entry of this run"
            )

    # -- checkpoints ----------------------------------------------------------------

    def finish(self) -> VerifyReport:
        """Check the checkpoints against the heads seen, and the latest head if given."""
        self.bodies.finish()
        keys, heads = self.recorder_keys, self.heads
        seen = self.previous_hash is not None or self.size
        signed = check_checkpoints(self.header, self.size, heads, keys, self.found) if seen else 0
        check_pinned_at(self.header, keys, self.found)
        if self.latest is not None:
            check_latest(self.latest, self.header, self.size, heads, keys, self.found)
        final = self.previous_hash if self.previous_hash is not _UNKNOWN else None
        self.witnessed.finish(self.found, self.size, self.heads, final, set(self.recorder_keys))
        found = self.found
        return VerifyReport(
            ok=not found.problems,
            problems=found.problems,
            flagged=found.flagged,
            entries=self.size,
            signed_size=signed,
            receipts_checked=self.bodies.receipts_checked,
            trusted_from_file=self.trusted,
        )


def _derived(kid: str, public_key: str) -> bool:
    """Whether ``kid`` is the key id of ``public_key`` (base64url of the raw key)."""
    try:
        return VerifyKey.from_raw(b64url_decode(public_key)).kid == kid
    except ValueError:
        return False
