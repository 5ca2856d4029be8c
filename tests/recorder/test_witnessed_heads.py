"""Witnessed heads: a Recorder sends each signed head to two witnesses (processes of their own, over
HTTP); ``verify --witness`` with ``--ask-witness`` then rejects a truncated export and a forked record
without holding the head, and a witness that is down is retried, reported, and cosigns once back."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from support.ports import free_port, running, wait_listening
from support.waiting import wait_until

from hatp_journal.recorder.cli.command_line import main as recorder_cli
from hatp_journal.recorder.config import WitnessConfig
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import RunRecordFile, RunStore
from hatp_journal.recorder.record.chain import seal
from hatp_journal.recorder.record.models import Checkpoint, Cosignature, Entry
from hatp_journal.recorder.record.witnessed import dues, latest_cosigned
from hatp_journal.recorder.testing import RecorderWorld
from hatp_journal.recorder.witness.client import latest_head, send_cosign
from hatp_journal.recorder.witness.sender import WitnessSender
from hatp_journal.recorder.witness.wire import (
    MAX_REQUEST_BYTES,
    CosignRequest,
    WitnessCode,
    WitnessedHead,
    WitnessErrorBody,
)
from hatp_journal.toolkit.signing import SigningKey, b64url

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

POLICY = Policy.model_validate({"autonomy": {"unknown": "allow"}})


@dataclass
class WitnessProcess:
    """``hatp-witness serve`` on a port of its own, with its key and store in ``folder``."""

    name: str
    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pubkey(self) -> Path:
        return self.folder / f"{self.name}.pub"

    def start(self) -> None:
        key = self.folder / f"{self.name}.key"
        if not key.exists():
            signing = SigningKey.generate()
            signing.save(key)
            self.pubkey.write_text(json.dumps(signing.public.wire().wire()))
        command = [sys.executable, "-m", "hatp_journal.recorder.witness", "serve", "--name", self.name]
        command += [
            "--key",
            str(key),
            "--store",
            str(self.folder / f"{self.name}.db"),
            "--port",
            str(self.port),
        ]
        self.process = subprocess.Popen(command, env=dict(os.environ), stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.process, f"witness {self.name}")

    def stop(self) -> None:
        if self.process is not None and running(self.process):
            self.process.terminate()
            self.process.wait()

    def config(self) -> WitnessConfig:
        return WitnessConfig(
            name=self.name, url=self.url, key=str(self.pubkey), retry_seconds=0.05, max_retry_seconds=0.2
        )


@pytest.fixture(scope="module")
def witnesses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WitnessProcess, WitnessProcess]]:
    folder = tmp_path_factory.mktemp("witnesses")
    pair = (WitnessProcess("alpha", folder, free_port()), WitnessProcess("beta", folder, free_port()))
    for witness in pair:
        witness.start()
    yield pair
    for witness in pair:
        witness.stop()


def echo_server() -> FastMCP:
    mcp = FastMCP("notes")

    @mcp.tool
    def note(text: str) -> str:
        return text

    return mcp


def cosigned_by(store: RunStore, run: str, *names: str) -> bool:
    latest = store.latest_checkpoint(run)
    assert latest is not None
    return all(latest_cosigned(store.engine, run, name) == (latest.size, latest.head) for name in names)


def cli(args: list[str]) -> tuple[int, str]:
    """``hatp-recorder ARGS`` in this process: its exit code and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = recorder_cli(args)
    return code, printed.getvalue()


def verify(file: Path, pair: tuple[WitnessProcess, WitnessProcess], *, ask: bool = True) -> tuple[int, str]:
    args = [str(file)]
    for witness in pair:
        args += ["--witness", f"{witness.name}={witness.pubkey}"]
        if ask:
            args += ["--ask-witness", f"{witness.name}={witness.url}"]
    return cli(["verify", *args])


def recorder_toml(folder: Path, store: RunStore, pair: tuple[WitnessProcess, WitnessProcess]) -> Path:
    """A config naming ``store`` (its key saved beside it) and the two witnesses."""
    store.key.save(folder / "recorder.key")
    lines = ["[recorder]", 'store = "recorder.db"', 'key = "recorder.key"', "[servers.notes]"]
    lines.append('url = "http://127.0.0.1:9/unused"')
    for witness in pair:
        lines += [
            "[[witnesses]]",
            f'name = "{witness.name}"',
            f'url = "{witness.url}"',
            f'key = "{witness.pubkey}"',
        ]
    config = folder / "recorder.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


async def notes(world: RecorderWorld, *texts: str) -> None:
    for text in texts:
        await world.agent.call_tool("notes_note", {"text": text})


def forked(record: RunRecordFile, at: int, key: SigningKey) -> RunRecordFile:
    """The record with entry ``at`` changed and every later entry chained anew, its last head signed
    by the Recorder's own key: a fork only someone holding that key can make."""
    entries: list[Entry] = list(record.entries[: at - 1])
    previous = entries[-1].hash if entries else record.entries[0].prev_hash
    for entry in record.entries[at - 1 :]:
        body = {**entry.body, "forked": True} if entry.seq == at else entry.body
        hashed = {**entry.hashed(), "body": body, "prevHash": previous}
        _, digest = seal(hashed)
        entries.append(Entry.model_validate({**hashed, "hash": digest}))
        previous = digest
    last = record.checkpoints[-1]
    payload = Checkpoint.model_validate({**last.wire(), "head": previous}).signed()
    signed = last.model_copy(update={"head": previous, "receipt": key.sign(payload, last.at)})
    return record.model_copy(update={"entries": entries, "checkpoints": [*record.checkpoints[:-1], signed]})


async def test_a_truncated_export_and_a_forked_record_fail_verify_with_witnesses_and_no_head(
    tmp_path: Path, witnesses: tuple[WitnessProcess, WitnessProcess]
) -> None:
    alpha, beta = witnesses
    world = await RecorderWorld.open(
        tmp_path, {"notes": echo_server()}, POLICY, witnesses=[alpha.config(), beta.config()]
    )
    try:
        store, run = world.store, None
        await notes(world, "one", "two")
        run = world.run
        store.checkpoint(run, "manual")
        wait_until(
            lambda: cosigned_by(store, run, "alpha", "beta"), "both witnesses to cosign the first head"
        )
        early = tmp_path / "early.json"
        early.write_bytes(store.export(run).to_bytes())
        await notes(world, "three")
        world.recorder.close()
        wait_until(lambda: cosigned_by(store, run, "alpha", "beta"), "both witnesses to cosign the close")
        whole = store.export(run)
        final = tmp_path / "final.json"
        final.write_bytes(whole.to_bytes())
        key = store.key
    finally:
        await world.close()

    assert {c.witness for c in whole.cosignatures or []} == {"alpha", "beta"}
    assert verify(final, witnesses)[0] == 0
    # The truncated file carries a genuine cosigned head: only the witnesses' own answer catches it.
    assert verify(early, witnesses, ask=False)[0] == 0
    code, said = verify(early, witnesses)
    assert code == 1, said
    assert "WITNESS_AHEAD" in said
    assert "--head" not in said  # the witnesses' answer stands for the head

    # A fork signed with the Recorder's own key: the witness refuses it and keeps its head.
    fork = forked(whole, whole.checkpoints[-1].size, key)
    head = fork.checkpoints[-1]
    asked = CosignRequest(
        checkpoint=head,
        recorder_key=key.public.wire(),
        since=head.size - 1,
        entries=[b64url(seal(fork.entries[-1].hashed())[0])],
    )
    assert code_of(send_cosign(alpha.url, run, asked, 10)) == WitnessCode.WITNESS_NOT_EXTENDING
    assert held_head(alpha, run) == (whole.checkpoints[-1].size, whole.checkpoints[-1].head)
    # So its cosignature can only be forged, and the forged file fails with and without asking.
    forger = SigningKey.generate()
    forged = [
        Cosignature.model_validate(
            {
                **c.wire(),
                "head": head.head,
                "receipt": forger.sign(
                    c.model_copy(update={"head": head.head}).signed(), c.receipt.issued_at
                ).wire(),
            }
        )
        if c.size == head.size
        else c
        for c in whole.cosignatures or []
    ]
    bad = tmp_path / "fork.json"
    bad.write_bytes(fork.model_copy(update={"cosignatures": forged}).to_bytes())
    code, said = verify(bad, witnesses, ask=False)
    assert code == 1
    assert "WITNESS_MISSING" in said
    assert "BAD_COSIGNATURE" in said
    code, said = verify(bad, witnesses)
    assert code == 1
    assert "WITNESS_FORKED" in said


async def test_a_witness_that_is_down_is_retried_and_reported_and_cosigns_the_head_once_back(
    tmp_path: Path, witnesses: tuple[WitnessProcess, WitnessProcess]
) -> None:
    alpha, beta = witnesses
    beta.stop()
    world = await RecorderWorld.open(
        tmp_path, {"notes": echo_server()}, POLICY, witnesses=[alpha.config(), beta.config()]
    )
    try:
        store = world.store
        await notes(world, "one")
        run = world.run
        store.checkpoint(run, "manual")
        wait_until(lambda: cosigned_by(store, run, "alpha"), "alpha to cosign")
        owed = wait_until(
            lambda: [d for d in dues(store.engine) if d.witness == "beta" and d.attempts >= 2],
            "beta to be retried",
        )
        head = store.latest_checkpoint(run)
        assert head is not None
        assert (owed[0].code, owed[0].size) == (WitnessCode.WITNESS_UNREACHABLE, head.size)
        config = recorder_toml(tmp_path, store, (alpha, beta))
        code, said = cli(["--config", str(config), "witnesses"])
        assert code == 1
        assert f"{run}\tbeta\te{head.size}\tWITNESS_UNREACHABLE" in said
        beta.start()
        wait_until(lambda: cosigned_by(store, run, "alpha", "beta"), "beta to cosign once back")
        assert dues(store.engine) == []
        assert cli(["--config", str(config), "witnesses"])[0] == 0
        final = tmp_path / "final.json"
        final.write_bytes(store.export(run).to_bytes())
    finally:
        await world.close()
    assert verify(final, witnesses)[0] == 0


def code_of(answer: WitnessedHead | WitnessErrorBody) -> WitnessCode | None:
    """The code of a witness's refusal; None if it cosigned."""
    return answer.code if isinstance(answer, WitnessErrorBody) else None


def held_head(witness: WitnessProcess, run: str) -> tuple[int, str] | None:
    """(size, head) of the witness's latest cosigned head of ``run``."""
    answer = latest_head(witness.url, run, 10)
    return (answer.cosignature.size, answer.cosignature.head) if isinstance(answer, WitnessedHead) else None


def _refusal(
    witness: WitnessProcess, run: str, body: Any, headers: dict[str, str] | None = None
) -> WitnessErrorBody:
    from hatp_journal.recorder.witness.client import _answer, _call

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    url = f"{witness.url}/v1/runs/{run}/cosign"
    request = urllib.request.Request(url, data=data, method="POST", headers=headers or {})
    answer = _answer(_call(request, 10))
    assert isinstance(answer, WitnessErrorBody)
    return answer


def test_a_witness_refuses_replays_other_recorders_bad_signatures_and_garbage_and_keeps_its_head(
    tmp_path: Path, witnesses: tuple[WitnessProcess, WitnessProcess]
) -> None:
    alpha, _ = witnesses
    key = SigningKey.generate()
    store = RunStore(tmp_path / "r.db", key)
    try:
        run = store.open_run(agent="bot", principal="human://acme.com/dana").id
        for n in range(3):
            store.append(run, "note", {"n": n})
        first = store.checkpoint(run, "manual")

        def asked(head: Checkpoint, since: int, signer: SigningKey = key) -> CosignRequest:
            entries = [b64url(data) for data in store.entry_bytes(run, since, head.size)]
            return CosignRequest(
                checkpoint=head,
                recorder_key=signer.public.wire(),
                since=since,
                entries=entries,
                run=store.run(run) if since == 0 else None,
            )

        assert isinstance(send_cosign(alpha.url, run, asked(first, 0), 10), WitnessedHead)
        store.append(run, "note", {"n": 3})
        second = store.checkpoint(run, "manual")
        assert isinstance(send_cosign(alpha.url, run, asked(second, 3), 10), WitnessedHead)
        # The same head again (a retry) gets its cosignature; an older one is refused.
        assert isinstance(send_cosign(alpha.url, run, asked(second, 3), 10), WitnessedHead)
        assert code_of(send_cosign(alpha.url, run, asked(first, 0), 10)) == WitnessCode.WITNESS_OLD_HEAD
        # A head of this run signed by another Recorder's key.
        other = SigningKey.generate()
        store.append(run, "note", {"n": 4})
        third = store.checkpoint(run, "manual")
        stolen = third.model_copy(update={"receipt": other.sign(third.signed(), third.at)})
        changed = send_cosign(alpha.url, run, asked(stolen, 4, other), 10)
        assert code_of(changed) == WitnessCode.WITNESS_RECORDER_CHANGED
        # A checkpoint whose signature is not recorderKey's.
        unsigned = send_cosign(alpha.url, run, asked(stolen, 4), 10)
        assert code_of(unsigned) == WitnessCode.WITNESS_BAD_SIGNATURE
        # A proof that skips an entry, a base the witness does not hold, garbage.
        skipped = asked(third, 4).model_copy(update={"entries": []})
        assert _refusal(alpha, run, skipped.wire()).code == WitnessCode.WITNESS_BAD_REQUEST
        stale = asked(third, 3).model_copy(update={"entries": asked(third, 4).entries * 2})
        assert _refusal(alpha, run, stale.wire()).code == WitnessCode.WITNESS_STALE_BASE
        for garbage in (
            b"not json",
            b"[]",
            b'{"checkpoint": 1}',
            b"\xff\xfe",
            json.dumps({"x": "\u0000"}).encode(),
        ):
            assert _refusal(alpha, run, garbage).code == WitnessCode.WITNESS_BAD_REQUEST
        # Said too large before it is read: the witness answers without taking the body in.
        declared = {"content-length": str(MAX_REQUEST_BYTES + 1)}
        assert _refusal(alpha, run, b"{}", declared).code == WitnessCode.WITNESS_TOO_LARGE
        assert held_head(alpha, run) == (second.size, second.head)
        with urllib.request.urlopen(f"{alpha.url}/v1/witness") as answer:  # who it is
            assert json.loads(answer.read()) == {"name": "alpha", "key": json.loads(alpha.pubkey.read_text())}
        # And the rightful next head is still cosigned.
        assert isinstance(send_cosign(alpha.url, run, asked(third, 4), 10), WitnessedHead)
    finally:
        store.dispose()


def test_a_recorder_whose_store_was_rolled_back_is_told_the_witness_holds_a_later_head(
    tmp_path: Path, witnesses: tuple[WitnessProcess, WitnessProcess]
) -> None:
    alpha, _ = witnesses
    key = SigningKey.generate()
    store = RunStore(tmp_path / "recorder.db", key)
    try:
        run = store.open_run(agent="bot", principal="human://acme.com/dana").id
        store.append(run, "note", {"n": 1})
        store.checkpoint(run, "manual")
        with sqlite3.connect(tmp_path / "recorder.db") as live, sqlite3.connect(tmp_path / "old.db") as old:
            live.backup(old)  # the store as it was, to be restored later
        store.append(run, "note", {"n": 2})
        store.checkpoint(run, "manual")
        assert WitnessSender(store, [alpha.config()]).send(run, alpha.config()) == 2
        later = store.entries(run)[-1].hash
    finally:
        store.dispose()
    restored = RunStore(tmp_path / "old.db", key)
    try:
        said: list[str] = []
        sender = WitnessSender(restored, [alpha.config()], report=said.append)
        sender.pass_now()

        [due] = dues(restored.engine)
        assert (due.code, due.size) == (WitnessCode.WITNESS_AHEAD_OF_STORE, 1)
        assert said[0].startswith("hatp-recorder: WITNESS_AHEAD_OF_STORE: witness alpha")
        assert held_head(alpha, run) == (2, later)  # the witness kept its head
    finally:
        restored.dispose()
