"""A tool server that dies during an undo (over streamable HTTP, killed at a known point: a ``gone``
key's first compensation) never makes ``approve`` or ``undo`` end in a traceback: they end with their
documented exit code (1: some steps not reversed, run ``undo`` again) and the hint, and a resume
with the server back finishes the undo."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.chain_server import gone_mark, values
from support.ports import free_port, wait_listening
from support.undo_org import CHAIN, Org

from hatp_journal.recorder import testing

pytestmark = pytest.mark.slow


class ChainOverHttp:
    """The chain server as a process of its own over streamable HTTP, started again after it dies."""

    def __init__(self, root: Path) -> None:
        self.db, self.key, self.port = root / "chain.db", root / "chain.key", free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        command = [sys.executable, str(CHAIN), "--db", str(self.db), "--key", str(self.key)]
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_listening(self.port, self.process, "the chain server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[ChainOverHttp]:
    server = ChainOverHttp(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def org(tmp_path: Path, capfd: pytest.CaptureFixture[str], chain: ChainOverHttp) -> Org:
    return testing.make_org(tmp_path, {"chain": chain.url}, capture=capfd)


def ended_in_one_line(err: str) -> bool:
    """Nothing on stderr, or the one line saying that a server went away (never a traceback)."""
    return err == "" or (len(err.splitlines()) == 1 and err.startswith("hatp-recorder: DOWNSTREAM_FAILED: "))


def three_puts() -> list[tuple[str, dict[str, str]]]:
    return [("chain_put", {"key": key, "value": "1"}) for key in ("a", "gone-b", "c")]


def test_a_server_killed_mid_undo_under_approve_ends_it_with_exit_code_1_and_no_traceback(
    org: Org, chain: ChainOverHttp
) -> None:
    run = org.agent(three_puts())
    ref, _ = org.plan(run, "--from", "1")

    code, out, err = org.approve(ref)  # the chain server dies compensating e2

    assert gone_mark(chain.db, "gone-b").exists()
    assert (code, "Traceback" in err) == (1, False), out + err
    assert f"undo {ref}` again" in out
    assert ended_in_one_line(err), err
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "failed"}

    chain.start()
    again, out, err = org.cli("undo", ref)

    assert (again, err) == (0, ""), out + err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert values(chain.db) == {}


def test_a_server_killed_mid_undo_under_undo_ends_it_with_exit_code_1_and_no_traceback(
    org: Org, chain: ChainOverHttp
) -> None:
    run = org.agent([("chain_put", {"key": key, "value": "1"}) for key in ("a", "gone-b", "gone-c")])
    ref, _ = org.plan(run, "--from", "1")
    first = org.approve(ref)  # the chain server dies compensating e3 (gone-c)
    chain.start()

    code, out, err = org.cli("undo", ref)  # e3 is retried and reversed; the server dies on e2 (gone-b)

    assert first[0] == 1, first
    assert ended_in_one_line(first[2]), first
    assert f"undo {ref}` again" in first[1] + first[2]
    assert gone_mark(chain.db, "gone-b").exists()
    assert (code, "Traceback" in err) == (1, False), out + err
    assert f"undo {ref}` again" in out
    assert ended_in_one_line(err), err
    assert org.reversal(run) == {"e3": "reversed", "e2": "failed", "e1": "failed"}

    chain.start()
    again, out, err = org.cli("undo", ref)

    assert (again, err) == (0, ""), out + err
    assert org.reversal(run) == {"e3": "reversed", "e2": "reversed", "e1": "reversed"}
    assert values(chain.db) == {}
