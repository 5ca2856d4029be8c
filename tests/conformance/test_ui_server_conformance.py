"""The UI server passes the whole suite driving the fake app in headless chromium, over stdio."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_helpers import command, failures, suite

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.servers.fakeapp.pytest_ui import require_chromium
from hatp_journal.servers.ui.testing import COLLEAGUE

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def invoicing_app(tmp_path: Path) -> Iterator[FakeApp]:
    """The fake invoicing app with its test controls (the suite's outside edits use them)."""
    require_chromium()
    with FakeApp(tmp_path / "app.db", test_controls=True) as app:
        yield app


def test_the_ui_server_passes_every_check_and_all_its_operations_are_verified(
    tmp_path: Path, invoicing_app: FakeApp
) -> None:
    ui = command(
        sys.executable, "-m", "hatp_journal.servers.ui", "serve", "--app-url", invoicing_app.url,
        "--db", tmp_path / "ui.db",
    )  # fmt: skip

    result = suite(ui)

    assert failures(result) == set()
    assert {outcome.outcome for outcome in result.outcomes} == {"passed"}
    assert result.verified_operations == ["create_invoice", "edit_invoice", "delete_invoice", "send_invoice"]
    assert [report.kind for report in result.operations if report.tool == "send_invoice"] == ["none"]
    assert COLLEAGUE in {invoice.updated_by for invoice in invoicing_app.trash()}
