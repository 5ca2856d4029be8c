"""``serve --courier`` of the servers that mail through an outbox: ``process`` (the default, a courier
process of its own) or ``inline`` (the server delivers right after each commit; the lean scenario
tests play with it). A value it does not know exits 2 before anything is created."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from hatp_journal.servers.calendar.cli import main as calendar
from hatp_journal.servers.email.cli import main as email

SERVERS: dict[str, Callable[[Sequence[str]], int]] = {"hatp-calendar": calendar, "hatp-email": email}


def exit_status(run: Callable[[Sequence[str]], int], argv: list[str]) -> int:
    try:
        return run(argv)
    except SystemExit as exited:  # argparse's refusal, where main lets it through
        return int(exited.code or 0)


@pytest.mark.parametrize("server", SERVERS)
def test_serve_with_a_courier_it_does_not_know_exits_2_naming_the_flag_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: str
) -> None:
    store = tmp_path / "s.db"

    status = exit_status(SERVERS[server], ["serve", "--db", str(store), "--courier", "pigeon"])

    assert status == 2
    assert "--courier" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
