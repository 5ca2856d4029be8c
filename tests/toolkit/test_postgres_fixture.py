"""The throwaway-cluster fixtures find PostgreSQL, or skip with the install hint, or fail in CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from hatp_journal._shared.pytest_postgres import INSTALL_HINT, ThrowawayCluster, require_postgres
from hatp_journal.toolkit.store import create_store_engine


def test_without_postgresql_the_tests_skip_with_the_install_hint_outside_ci(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_postgres(tmp_path, environ={"PATH": str(tmp_path), "CI": "false"})

    assert INSTALL_HINT in str(skipped.value)


def test_without_postgresql_the_tests_fail_when_ci_is_true(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        require_postgres(tmp_path, environ={"PATH": str(tmp_path), "CI": "true"})

    assert INSTALL_HINT in str(failed.value)


def test_debians_newest_server_programs_are_found_off_the_path(tmp_path: Path) -> None:
    for version in ("13", "15", "9"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "pg_ctl").touch()

    binaries, _ = require_postgres(tmp_path, environ={"PATH": str(tmp_path / "empty"), "CI": "true"})

    assert binaries == tmp_path / "15" / "bin"


def test_each_store_is_a_schema_of_its_own_on_the_sessions_cluster(
    postgres_cluster: ThrowawayCluster,
) -> None:
    first, second = (create_store_engine(postgres_cluster.new_store()) for _ in range(2))
    with first.begin() as connection:
        connection.execute(text("CREATE TABLE mine (n integer)"))

    with second.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('mine')")).scalar() is None
    for engine in (first, second):
        engine.dispose()
