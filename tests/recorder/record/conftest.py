"""Fixtures: a Recorder key, a tool-server key, and a Run Record store in a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from record_helpers import TickingClock

from hatp_journal.recorder.record import RunStore
from hatp_journal.toolkit.signing import SigningKey


@pytest.fixture(scope="session")
def recorder_key() -> SigningKey:
    """The Recorder's signing key."""
    return SigningKey.generate()


@pytest.fixture(scope="session")
def server_key() -> SigningKey:
    """The CRM tool server's receipt key."""
    return SigningKey.generate()


@pytest.fixture
def store(tmp_path: Path, recorder_key: SigningKey) -> Iterator[RunStore]:
    """A store in a fresh SQLite file, signing every 5 entries, on a ticking clock."""
    runs = RunStore(tmp_path / "record.db", recorder_key, checkpoint_every=5, clock=TickingClock())
    yield runs
    runs.dispose()
