"""`hatp-recorder explain` answers from the tool list kept at the last connect, without starting the
server, while that list still describes the same server (how it is reached, the keys pinned for it);
``--refresh`` and anything kept that no longer holds (another pin, another command, a file that is
not what was written) make it connect again, never fail on what was kept.

The CRM server is started through a script; once its list is kept, the script is made to fail, so a
started server is an error that shows.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import pytest
from sqlalchemy import text

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.gateway.core import Recorder
from hatp_journal.recorder.gateway.explain import explain as explain_call
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.policy import Policy
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit.signing import SigningKey
from hatp_journal.toolkit.store import create_store_engine

pytestmark = pytest.mark.slow

WORKS = f'#!/bin/sh\nexec "{Path(sys.executable).parent / "hatp-crm"}" serve --db crm.db --key crm.key\n'
FAILS = "#!/bin/sh\necho 'this server must not be started' >&2\nexit 3\n"


def configure(folder: Path, *, pin: list[str] | None = None, args: list[str] | None = None) -> Path:
    config = folder / "recorder.toml"
    lines = ["[recorder]", 'store = "recorder.db"', "[servers.crm]", 'command = "./crm.sh"']
    if pin is not None:
        lines.append(f"pin = {json.dumps(pin)}")
    if args is not None:
        lines.append(f"args = {json.dumps(args)}")
    config.write_text("\n".join(lines) + "\n")
    (folder / "policy.json").write_text("{}")
    return config


def server(folder: Path, script: str) -> None:
    path = folder / "crm.sh"
    path.write_text(script)
    path.chmod(0o755)


def explain(config: Path, capfd: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    status = main(["--config", str(config), "explain", "crm", "update_deal", *more])
    said = capfd.readouterr()
    return status, said.out, said.err


@dataclass
class Kept:
    """A config whose server was explained once, its list kept, and whose script now fails."""

    folder: Path
    config: Path
    first: str  # what the first explain printed
    store: bytes  # the Recorder's database as serve left it (the keys it pinned)

    @property
    def file(self) -> Path:
        return self.folder / "recorder.db.tools" / "crm.json"


@pytest.fixture(scope="module")
def kept_once(tmp_path_factory: pytest.TempPathFactory) -> Kept:
    """One real start of the server for the whole module (each costs seconds): ``serve``'s connect
    keeps the list; the script fails from then on, so the explain here answers from that list."""
    folder = tmp_path_factory.mktemp("explain-kept")
    config = configure(folder)
    server(folder, WORKS)
    served = anyio.run(partial(serve_connects, config))
    server(folder, FAILS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["--config", str(config), "explain", "crm", "update_deal"])
    assert status == 0
    assert "crm_update_deal" in served
    assert "(--refresh asks it now)" in out.getvalue()  # from the list serve kept: not started again
    return Kept(folder, config, out.getvalue(), (folder / "recorder.db").read_bytes())


async def serve_connects(config_file: Path) -> list[str]:
    """What ``hatp-recorder serve`` does at its start: connect its servers (keeping their lists)."""
    config = load_config(config_file)
    store = RunStore(config.recorder.store, SigningKey.generate())
    recorder = Recorder(config, store=store, policy=Policy())
    try:
        async with AsyncExitStack() as stack:
            await recorder.start(stack)
            return sorted(recorder.forwards)
    finally:
        store.dispose()


@pytest.fixture
def kept(kept_once: Kept) -> Iterator[Kept]:
    """The kept list, the config, the store and a failing script; as they were again after the test."""
    saved = kept_once.file.read_bytes()
    server(kept_once.folder, FAILS)
    yield kept_once
    configure(kept_once.folder)
    kept_once.file.write_bytes(saved)
    for name in ("recorder.db-wal", "recorder.db-shm"):
        (kept_once.folder / name).unlink(missing_ok=True)
    (kept_once.folder / "recorder.db").write_bytes(kept_once.store)


def decision_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if not line.startswith("listed:")]


def test_explain_answers_from_the_kept_list_without_starting_the_server(
    kept: Kept, capfd: pytest.CaptureFixture[str]
) -> None:
    status, again, err = explain(kept.config, capfd)

    assert status == 0, err
    assert decision_lines(again) == decision_lines(kept.first)
    assert "(--refresh asks it now)" in again
    assert "must not be started" not in err


def test_refresh_starts_the_server_whatever_is_kept(kept: Kept, capfd: pytest.CaptureFixture[str]) -> None:
    status, _, err = explain(kept.config, capfd, "--refresh")

    assert status == 2
    assert "DOWNSTREAM_FAILED" in err
    assert "Traceback" not in err


def test_a_key_pinned_in_the_config_since_the_list_was_kept_ignores_it(
    kept: Kept, capfd: pytest.CaptureFixture[str]
) -> None:
    configure(kept.folder, pin=[SigningKey.load_or_create(kept.folder / "crm.key").kid])

    status, _, err = explain(kept.config, capfd)

    assert status == 2  # it started the server: the script failed
    assert "DOWNSTREAM_FAILED" in err


def test_a_key_pinned_in_the_store_since_the_list_was_kept_ignores_it(
    kept: Kept, capfd: pytest.CaptureFixture[str]
) -> None:
    engine = create_store_engine(kept.folder / "recorder.db")
    with engine.begin() as connection:  # serve pinned the server's key: another is pinned in its place
        connection.execute(text("DELETE FROM rec_pin WHERE server = 'crm'"))
        connection.execute(text("DELETE FROM rec_pin_set WHERE server = 'crm'"))
    other = SigningKey.generate().public
    assert PinStore(engine).pin_first("crm", {other.kid: other}) == {other.kid: other}
    engine.dispose()

    status, _, err = explain(kept.config, capfd)

    assert status == 2
    assert "DOWNSTREAM_FAILED" in err


def test_a_server_reached_another_way_ignores_the_kept_list(
    kept: Kept, capfd: pytest.CaptureFixture[str]
) -> None:
    configure(kept.folder, args=["--verbose"])

    status, _, err = explain(kept.config, capfd)

    assert status == 2
    assert "DOWNSTREAM_FAILED" in err


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b"[]", b'{"format": "hatp-kept-tools/9"}', b"\xff\xfe", b""],
    ids=["not-json", "a-list", "another-format", "not-utf8", "empty"],
)
def test_a_kept_file_that_is_not_what_was_written_makes_explain_start_the_server(
    kept: Kept, capfd: pytest.CaptureFixture[str], garbage: bytes
) -> None:
    kept.file.write_bytes(garbage)

    status, _, err = explain(kept.config, capfd)

    assert status == 2  # started (the script failed), not a traceback over the file
    assert "DOWNSTREAM_FAILED" in err
    assert "Traceback" not in err


def test_a_list_read_again_after_a_broken_one_is_kept_again(
    kept: Kept, capfd: pytest.CaptureFixture[str]
) -> None:
    kept.file.write_bytes(b"{not json")
    server(kept.folder, WORKS)

    status, again, err = explain(kept.config, capfd)
    server(kept.folder, FAILS)
    answered = explain(kept.config, capfd)

    assert status == 0, err
    assert decision_lines(again) == decision_lines(kept.first)
    assert answered[0] == 0  # from the list kept again
    assert "(--refresh asks it now)" in answered[1]


@pytest.mark.anyio
async def test_what_serve_listed_at_its_connect_answers_explain(kept: Kept) -> None:
    # kept_once: serve connected once; no explain has started the server since (the script fails).
    explained = await explain_call(load_config(kept.config), Policy(), "crm", "update_deal", {}, utc_now())

    assert explained.listed_at is not None  # not started: the script would have failed
    assert explained.decision.reversibility is not None
