"""The Recorder's store on start and under ``hatp-recorder store-check``: versioned, and a wrong URL,
an unreachable database or a schema of a later version is bad input with a stable code (exit 2)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from sqlalchemy import text

from hatp_journal._shared.clock import parse_wire_time
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.cli.store_check import PART_TABLES  # every part's tables known, as in `serve`
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.policy.stored_ledger import StoredLedger
from hatp_journal.recorder.record import RunStore
from hatp_journal.recorder.runs.keys import CLAIM_TTL, ClaimState, RunKeys
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.errors import StoreCode, StoreError
from hatp_journal.toolkit.store import UNDO_SCHEMA, create_store_engine


def configure(folder: Path, store: str) -> Path:
    config = folder / "recorder.toml"
    recorder = f'[recorder]\nstore = {json.dumps(store)}\nkey = "recorder.key"\n'
    config.write_text(recorder + '[servers.crm]\ncommand = "hatp-crm"\n')
    return config


def cli(config: Path, command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--config", str(config), command])
    said = capsys.readouterr()
    return code, said.out, said.err


def closed_port() -> int:
    with socket.socket() as probe:  # bound, never listening: a connection to it is refused
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_started_store_checks_out_part_by_part(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert PART_TABLES["fleet-lease"] == ["rec_fleet_lease"]
    store = RunStore(store_url, SigningKey.generate())
    PinStore(store.engine)
    StoredLedger(store.engine)
    store.dispose()

    code, out, err = cli(configure(tmp_path, store_url), "store-check", capsys)

    assert code == 0, err
    parts = {line.split("\t")[0]: line.split("\t")[1:] for line in out.splitlines()}
    unused = "created, not used yet (its version is recorded on first use)"
    assert parts == {
        "record": ["1", "1", "ok"],
        "answers": ["1", "1", "ok"],
        "pins": ["1", "1", "ok"],
        "ledger": ["1", "1", "ok"],
        "lease": ["-", "1", unused],  # its table exists: the store's first start made every table
        "fleet-lease": ["-", "1", unused],
        "runs": ["-", "2", unused],
        "web": ["-", "1", unused],
        "undo": [str(UNDO_SCHEMA), str(UNDO_SCHEMA), "ok"],
        "witnessed": ["1", "1", "ok"],  # a RunStore makes it: exports read it
    }


def test_a_part_whose_tables_were_never_made_is_reported_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore(tmp_path / "recorder.db", SigningKey.generate())
    with store.engine.begin() as connection:
        connection.execute(text("DROP TABLE rec_fleet_lease"))
    store.dispose()

    code, out, err = cli(configure(tmp_path, "recorder.db"), "store-check", capsys)

    assert code == 0, err
    [fleet] = [line.split("\t") for line in out.splitlines() if line.startswith("fleet-lease")]
    assert fleet == ["fleet-lease", "-", "1", "not created yet (made on first use)"]


def test_a_postgresql_store_never_started_is_named_without_its_password(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_password = postgres_url.replace("postgres@", "postgres:s3cret-pw@", 1)

    code, _, err = cli(configure(tmp_path, with_password), "store-check", capsys)

    assert code == 2
    assert err.startswith(f"hatp-recorder: {StoreCode.STORE_SCHEMA_MISSING}: ")
    assert "s3cret" not in err
    assert "postgres:***@" in err


V1_CLAIMS = (
    "CREATE TABLE rec_ask_claim (run VARCHAR NOT NULL, ask VARCHAR NOT NULL, at VARCHAR NOT NULL,"
    " PRIMARY KEY (run, ask))"
)
"""``rec_ask_claim`` as the runs part's version 1 made it."""


def test_a_runs_part_of_version_1_is_migrated_on_start_and_its_old_claims_are_in_doubt_not_resent(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore(store_url, SigningKey.generate())
    run = store.open_run(agent="sales-bot", principal="dana").id
    with store.engine.begin() as connection:  # the claims table as version 1 made it, with one claim
        connection.execute(text("DROP TABLE IF EXISTS rec_ask_claim"))  # made with the engine, at version 2
        connection.execute(text(V1_CLAIMS))
        connection.execute(text("INSERT INTO hatp_schema (part, version) VALUES ('runs', 1)"))
        connection.execute(text(f"INSERT INTO rec_ask_claim VALUES ('{run}', 'e1', '2026-12-04T00:00:00Z')"))
    store.dispose()
    config = configure(tmp_path, store_url)
    before = cli(config, "store-check", capsys)[1]

    store = RunStore(store_url, SigningKey.generate())
    keys = RunKeys(store)
    later = parse_wire_time("2026-12-04T00:00:01Z")
    taken = keys.claim(run, "e1", later)  # its holder is unknown and alive, as far as anyone knows
    long_after = keys.claim(run, "e1", later + CLAIM_TTL)
    store.dispose()
    after = cli(config, "store-check", capsys)[1]

    assert "runs\t1\t2\t" in before
    assert "runs\t2\t2\tok" in after
    assert (taken, long_after) == (ClaimState.TAKEN, ClaimState.IN_DOUBT)  # it may have been sent


def test_a_store_of_a_later_schema_is_refused_on_start_and_by_the_check_and_left_as_it_was(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore(store_url, SigningKey.generate())
    run = store.open_run(agent="sales-bot", principal="dana")
    with store.engine.begin() as connection:
        connection.execute(text("UPDATE hatp_schema SET version = 99 WHERE part = 'record'"))
    store.dispose()
    config = configure(tmp_path, store_url)

    with pytest.raises(StoreError) as refused:
        RunStore(store_url, SigningKey.generate())
    checked = cli(config, "store-check", capsys)
    started = cli(config, "runs", capsys)

    assert refused.value.code == StoreCode.STORE_SCHEMA_NEWER
    for code, _, err in (checked, started):
        assert code == 2
        assert err.startswith(f"hatp-recorder: {StoreCode.STORE_SCHEMA_NEWER}: ")
    engine = create_store_engine(store_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT id FROM rec_run")).scalars().all() == [run.id]
    engine.dispose()


def test_a_store_never_started_fails_the_check_and_is_not_created_by_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(configure(tmp_path, "recorder.db"), "store-check", capsys)

    assert code == 2
    assert err.startswith(f"hatp-recorder: {StoreCode.STORE_SCHEMA_MISSING}: ")
    assert not (tmp_path / "recorder.db").exists()


@pytest.mark.parametrize(
    ("store", "code"),
    [
        ("nosuchdatabase://somewhere/x", StoreCode.STORE_BAD_URL),
        ("postgresql://hatp@127.0.0.1:notaport/x", StoreCode.STORE_BAD_URL),
        ("postgresql://hatp@127.0.0.1:{closed}/x", StoreCode.STORE_UNREACHABLE),
    ],
    ids=["unknown-scheme", "malformed", "unreachable"],
)
@pytest.mark.parametrize("command", ["runs", "store-check"])
def test_a_store_url_that_cannot_be_used_is_bad_input_with_its_code(
    store: str, code: StoreCode, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = configure(tmp_path, store.format(closed=closed_port()))

    status, _, err = cli(config, command, capsys)

    assert status == 2
    assert err.startswith(f"hatp-recorder: {code}: ")
