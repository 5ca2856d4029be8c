"""The public API of ``hatp_journal.servers.fakeapp`` is deliberate: this test pins it."""

from __future__ import annotations

import hatp_journal.servers.fakeapp as fakeapp
from hatp_journal.servers.fakeapp import pytest_fixtures


def test_the_package_exports_exactly_its_public_names():
    assert sorted(fakeapp.__all__) == [
        "APP_USER",
        "AlreadySent",
        "Clock",
        "FakeApp",
        "FakeAppError",
        "InvalidField",
        "Invoice",
        "InvoiceNotFound",
        "InvoiceStore",
        "LAYOUTS",
        "Layout",
        "StoreError",
    ]
    assert all(hasattr(fakeapp, name) for name in fakeapp.__all__)


def test_the_fixture_module_exports_the_fixtures_other_suites_reuse():
    assert {"fake_app", "fake_app_server", "chromium", "browser_page", "require_chromium"} <= set(
        pytest_fixtures.__all__
    )
    assert all(hasattr(pytest_fixtures, name) for name in pytest_fixtures.__all__)
