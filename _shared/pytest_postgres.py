"""Pytest fixtures for running store tests on a throwaway PostgreSQL cluster of their own.

Turn them on in a root ``conftest.py``::

    pytest_plugins = ["hatp_journal._shared.pytest_postgres"]

``postgres_url`` is the URL of a fresh, empty store (a schema of its own); ``store_url`` runs a
test twice, on a SQLite file and on PostgreSQL. One cluster is started per test session (per pytest-xdist
worker), the first time a test asks for it: ``initdb`` into a temporary folder, ``pg_ctl start``
on a free port of 127.0.0.1, durability off (fsync), stopped and deleted at the end.

The server's binaries come from ``PATH`` or Debian's ``/usr/lib/postgresql/<version>/bin``
(``apt-get install postgresql``). PostgreSQL refuses to run as root: as root the cluster is run
as the ``postgres`` user the Debian package creates, owning its folder. Without PostgreSQL the
tests skip with the install hint, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from itertools import count
from pathlib import Path
from typing import Final

import pytest

__all__ = [
    "INSTALL_HINT",
    "ThrowawayCluster",
    "find_postgres",
    "postgres_cluster",
    "postgres_url",
    "require_postgres",
    "store_url",
]

INSTALL_HINT: Final = "apt-get install postgresql"
_DEBIAN_BINARIES: Final = Path("/usr/lib/postgresql")
_SERVER_USER: Final = "postgres"  # who runs the cluster when the tests run as root
_START_ATTEMPTS: Final = 3  # a free port can be taken between choosing it and binding it


def find_postgres(debian: Path = _DEBIAN_BINARIES, search: str | None = None) -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on ``search`` (``PATH``), else Debian's newest."""
    initdb, pg_ctl = shutil.which("initdb", path=search), shutil.which("pg_ctl", path=search)
    if initdb and pg_ctl and Path(initdb).resolve().parent == Path(pg_ctl).resolve().parent:
        return Path(pg_ctl).resolve().parent
    versions = [path for path in debian.glob("*/bin") if (path / "pg_ctl").exists()]
    versions.sort(key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    return versions[-1] if versions else None


def require_postgres(
    debian: Path = _DEBIAN_BINARIES, environ: Mapping[str, str] = os.environ
) -> tuple[Path, str | None]:
    """PostgreSQL's binaries and the user to run them as (None: this one); else skip, or fail in CI.

    ``environ``'s ``PATH`` is searched first, then ``debian``.
    """
    binaries = find_postgres(debian, environ.get("PATH"))
    user = _SERVER_USER if os.geteuid() == 0 else None
    problem = None
    if binaries is None:
        problem = "PostgreSQL is not installed"
    elif user is not None and not _user_exists(user):
        problem = f"running as root and there is no {user} user to run PostgreSQL as"
    if problem is None:
        assert binaries is not None
        return binaries, user
    message = f"{problem}: install Debian's PostgreSQL ({INSTALL_HINT}, as root)"
    if environ.get("CI") == "true":
        pytest.fail(f"{message}; the PostgreSQL tests must run in CI", pytrace=False)
    pytest.skip(message)


class ThrowawayCluster:
    """A PostgreSQL cluster in a temporary folder, trusting local connections, on a free port."""

    def __init__(self, binaries: Path, user: str | None, *, durable: bool = False) -> None:
        self.binaries = binaries
        self.user = user
        # Tests run without fsync (nothing there outlives them); benchmarks compare durable stores.
        self.durable = durable
        self.folder = Path(tempfile.mkdtemp(prefix="hatp-postgres-"))
        self.data = self.folder / "data"
        self.port = 0
        self._schemas = count(1)

    def start(self) -> None:
        """initdb and start; raises ``RuntimeError`` with the server's log if it would not start."""
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        for _ in range(_START_ATTEMPTS):
            self.port = _free_port()
            options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}"
            if not self.durable:
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            log = self.folder / "server.log"
            data, logged = str(self.data), str(log)
            started = self._run("pg_ctl", "-D", data, "-l", logged, "-o", options, "-w", "start", check=False)
            if started.returncode == 0:
                return
        raise RuntimeError(f"PostgreSQL would not start:\n{log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        """Stop the server at once and delete its folder."""
        if self.port:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, schema: str | None = None) -> str:
        """The URL of the cluster's database; with ``schema``, one that works in that schema only."""
        url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return url if schema is None else f"{url}?options=-csearch_path%3D{schema}"

    def new_store(self) -> str:
        """The URL of a fresh, empty schema (a schema costs a millisecond, a database a fifth of a second)."""
        import psycopg  # the driver is a dependency of the package, but only these tests need it here

        name = f"test_{next(self._schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {name}")  # name is ours: test_<n>
        return self.url(name)

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.binaries / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, cwd=self.folder)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[ThrowawayCluster]:
    """One throwaway cluster for the session (per xdist worker), started on first use."""
    binaries, user = require_postgres()
    cluster = ThrowawayCluster(binaries, user)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: ThrowawayCluster) -> str:
    """The URL of a fresh, empty store (a schema of its own) on the session's cluster."""
    return postgres_cluster.new_store()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store for the test: a fresh SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
