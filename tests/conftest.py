"""Shared test settings."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

# postgres_url and store_url (SQLite, then PostgreSQL): one throwaway cluster per session.
pytest_plugins = ["hatp_journal._shared.pytest_postgres"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first: with ``-n auto --dist loadfile`` a long file that starts last keeps one
    worker busy while the others sit idle, so the long ones are handed out at the start."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _stop_in_process_servers() -> Iterator[None]:
    """Servers a test started in this process (support.undo_org) stop when it ends."""
    yield
    started = sys.modules.get("support.undo_org")  # imported by the tests that start them
    if started is not None:
        started.stop_servers()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio only."""
    return "asyncio"
