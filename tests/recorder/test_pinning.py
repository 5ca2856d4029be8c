"""Receipt keys are pinned once per server, atomically; a changed key or a garbage keys answer is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from hostile_keys_server import GARBAGE, server
from sqlalchemy import text

from hatp_journal._shared.pytest_postgres import ThrowawayCluster
from hatp_journal.recorder.cli.command_line import main
from hatp_journal.recorder.config import ServerConfig
from hatp_journal.recorder.gateway.downstream import Downstream, DownstreamCode, DownstreamError
from hatp_journal.recorder.intake.pins import PinStore
from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.signing import VerifyKey, b64url
from hatp_journal.toolkit.store import create_store_engine

HERE = Path(__file__).parent

ROUNDS = 20


class Racers:
    """Two processes on one store file, each trusting its own key for a server when told ``go``."""

    def __init__(self, store: Path | str) -> None:
        PinStore(create_store_engine(store))  # the tables exist before either racer opens the file
        self.store = store
        self.processes = [
            subprocess.Popen(
                [sys.executable, str(HERE / "pin_racer.py"), str(store)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]

    def race(
        self, server: str, keys: tuple[VerifyKey, VerifyKey], engine: str = "immediate"
    ) -> list[dict[str, Any]]:
        """Both racers meet the unpinned ``server`` at once, offering ``keys``; what each concluded."""
        for process, key in zip(self.processes, keys, strict=True):
            line = {"server": server, "key": b64url(key.raw()), "engine": engine}
            self._send(process, json.dumps(line))
        assert [self._read(process) for process in self.processes] == ["ready", "ready"]
        for process in self.processes:  # released together: both are blocked reading this line
            self._send(process, "go")
        return [json.loads(self._read(process)) for process in self.processes]

    def close(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
            assert process.wait() == 0

    @staticmethod
    def _send(process: subprocess.Popen[str], line: str) -> None:
        assert process.stdin is not None
        process.stdin.write(line + "\n")
        process.stdin.flush()

    @staticmethod
    def _read(process: subprocess.Popen[str]) -> str:
        assert process.stdout is not None
        return process.stdout.readline().strip()


@pytest.fixture(scope="module")
def racers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Racers]:
    racing = Racers(tmp_path_factory.mktemp("race") / "recorder.db")
    yield racing
    racing.close()


@pytest.fixture(scope="module")
def postgresql_racers(postgres_cluster: ThrowawayCluster) -> Iterator[Racers]:
    racing = Racers(postgres_cluster.new_store())
    yield racing
    racing.close()


def pin_sets(store: Path | str, server: str) -> int:
    """How many key sets are recorded as pinned for ``server``."""
    with create_store_engine(store).connect() as connection:
        return int(
            connection.execute(
                text("SELECT count(*) FROM rec_pin_set WHERE server = :server"), {"server": server}
            ).scalar_one()
        )


# "deferred": a plain SQLite engine that takes no lock before it writes, as on a server database
# both racers read "nothing pinned"; only the per-server row stops the second pin.
@pytest.mark.parametrize("engine", ["immediate", "deferred", "postgresql"])
def test_two_processes_pinning_one_server_with_different_keys_at_once_end_with_one_pin_and_one_refusal(
    request: pytest.FixtureRequest, engine: str
) -> None:
    racers: Racers = request.getfixturevalue("postgresql_racers" if engine == "postgresql" else "racers")
    pins = PinStore(create_store_engine(racers.store))
    for round_ in range(ROUNDS):
        server = f"crm-{engine}-{round_}"
        keys = (SigningKey.generate().public, SigningKey.generate().public)

        outcomes = racers.race(server, keys, engine)

        winners = [i for i, outcome in enumerate(outcomes) if "trusted" in outcome]
        assert len(winners) == 1, (round_, outcomes)
        [winner] = winners
        assert outcomes[winner]["trusted"] == [keys[winner].kid]
        assert outcomes[1 - winner] == {"code": DownstreamCode.KEY_CHANGED}
        assert sorted(pins.pinned(server)) == [keys[winner].kid]
        assert pin_sets(racers.store, server) == 1


def test_two_processes_meeting_one_server_with_the_same_key_at_once_both_trust_it(racers: Racers) -> None:
    key = SigningKey.generate().public

    outcomes = racers.race("deals", (key, key))

    assert outcomes == [{"trusted": [key.kid]}, {"trusted": [key.kid]}]
    assert sorted(PinStore(create_store_engine(racers.store)).pinned("deals")) == [key.kid]


def test_a_server_offering_none_of_its_pinned_keys_is_refused_as_key_changed_and_not_trusted(
    tmp_path: Path,
) -> None:
    pins = PinStore(create_store_engine(tmp_path / "recorder.db"))
    first, second = SigningKey.generate().public, SigningKey.generate().public
    Downstream("crm", ServerConfig(command="not-started"), pins).trust({first.kid: first})
    later = Downstream("crm", ServerConfig(command="not-started"), pins)

    with pytest.raises(DownstreamError) as refused:
        later.trust({second.kid: second})

    assert refused.value.code == DownstreamCode.KEY_CHANGED
    assert later.keys == {}
    assert sorted(pins.pinned("crm")) == [first.kid]


def test_a_server_still_offering_a_pinned_key_among_new_ones_is_trusted_with_the_pinned_key_only(
    tmp_path: Path,
) -> None:
    pins = PinStore(create_store_engine(tmp_path / "recorder.db"))
    first, second = SigningKey.generate().public, SigningKey.generate().public
    Downstream("crm", ServerConfig(command="not-started"), pins).trust({first.kid: first})
    later = Downstream("crm", ServerConfig(command="not-started"), pins)

    later.trust({first.kid: first, second.kid: second})

    assert sorted(later.keys) == [first.kid]
    assert sorted(pins.pinned("crm")) == [first.kid]


def test_serve_refuses_a_tool_server_whose_key_changed_with_key_changed_and_exit_2(tmp_path: Path) -> None:
    # The crm server was met before with another key: that one is pinned in the Recorder's store.
    pinned = SigningKey.generate().public
    store = RunStore(tmp_path / "recorder.db", SigningKey.load_or_create(tmp_path / "recorder.key"))
    PinStore(store.engine).pin_first("crm", {pinned.kid: pinned})
    (tmp_path / "policy.json").write_text("{}")
    (tmp_path / "recorder.toml").write_text(
        "[servers.crm]\n"
        f"cwd = {json.dumps(str(tmp_path))}\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "hatp_journal.servers.crm.cli", "serve", "--db", "crm.db"]\n'
    )

    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "hatp_journal.recorder.cli.command_line",
            "--config",
            "recorder.toml",
            "serve",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )

    assert served.returncode == 2
    told = [line for line in served.stderr.splitlines() if line.startswith("hatp-recorder")]
    assert [line.split(":")[1].strip() for line in told] == [DownstreamCode.KEY_CHANGED]
    assert "Traceback" not in served.stderr
    assert sorted(PinStore(store.engine).pinned("crm")) == [pinned.kid]
    assert store.runs() == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", sorted(GARBAGE))
async def test_a_garbage_keys_answer_is_refused_as_downstream_failed_naming_the_server_and_pins_nothing(
    tmp_path: Path, kind: str
) -> None:
    pins = PinStore(create_store_engine(tmp_path / "recorder.db"))
    downstream = Downstream(
        "hostile", ServerConfig(url="http://127.0.0.1:9/embedded-in-this-process"), pins, server(kind)
    )

    with pytest.raises(DownstreamError) as refused:
        async with AsyncExitStack() as stack:
            await downstream.connect(stack)

    assert refused.value.code == DownstreamCode.DOWNSTREAM_FAILED
    assert refused.value.message.startswith("hostile ")
    assert downstream.keys == {}
    assert pins.pinned("hostile") == {}


@pytest.mark.parametrize("kind", ["not-an-object", "kid-not-its-key", "huge-string", "deep"])
def test_serve_refuses_a_tool_server_answering_garbage_keys_with_downstream_failed_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], kind: str
) -> None:
    (tmp_path / "policy.json").write_text("{}")
    (tmp_path / "recorder.toml").write_text(
        "[servers.hostile]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(HERE / 'hostile_keys_server.py'), kind])}\n"
    )

    code = main(["--config", str(tmp_path / "recorder.toml"), "serve"])

    assert code == 2
    told = [line for line in capfd.readouterr().err.splitlines() if line.startswith("hatp-recorder")]
    assert [line.split(":")[1].strip() for line in told] == [DownstreamCode.DOWNSTREAM_FAILED]
    assert told[0].startswith("hatp-recorder: DOWNSTREAM_FAILED: hostile ")
    store = RunStore(tmp_path / "recorder.db", SigningKey.load_or_create(tmp_path / "recorder.key"))
    assert store.runs() == []
    assert PinStore(store.engine).pinned("hostile") == {}
