"""Shared test settings."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

MEMORY_DISK = Path("/dev/shm")
ROOM_NEEDED = 4 * 1024**3
"""Free bytes a memory disk must have to hold the suite's files (chromium's and PostgreSQL's too)."""


def _temporary_files_in_memory() -> None:
    """Temporary files (tmp_path, tempfile, and the servers the tests start) go to a memory disk
    when there is a roomy one and nobody chose TMPDIR: SQLite's fsync per commit then costs
    nothing, as the PostgreSQL fixture runs with fsync off. No test outlives the machine's power,
    so none proves anything an fsync adds; the files are real files all the same."""
    if os.environ.get("TMPDIR") or not MEMORY_DISK.is_dir() or not os.access(MEMORY_DISK, os.W_OK):
        return
    if shutil.disk_usage(MEMORY_DISK).free < ROOM_NEEDED:
        return
    os.environ["TMPDIR"] = str(MEMORY_DISK)  # for the processes the tests start
    tempfile.tempdir = str(MEMORY_DISK)  # gettempdir() may have been asked already


_temporary_files_in_memory()


def _bytecode_kept() -> None:
    """Compiled modules are kept (``__pycache__``, ignored by git) even where PYTHONDONTWRITEBYTECODE
    is set, as on some CI machines: else every Python process the suite starts (hundreds: servers,
    Recorders, commands) compiles the project's modules again, and each xdist worker rewrites and
    compiles every test module it collects. Measured here: collection 10.3 s of CPU per worker
    without the cache, 5 s with it; a file that starts 15 servers, 30 s of CPU less 1."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the processes the tests start
    sys.dont_write_bytecode = False  # this process: pytest's rewritten test modules, imports from now


_bytecode_kept()

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
