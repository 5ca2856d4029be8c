"""Shared test settings."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first: with ``-n auto --dist loadfile`` a long file that starts last keeps one
    worker busy while the others sit idle, so the long ones are handed out at the start."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio only."""
    return "asyncio"
