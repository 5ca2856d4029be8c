"""In a real browser: drive the app through its UI and read records from the accessibility tree.

The fingerprint here is what protocol.md §6 asks a computer-use server to take: one record's on-screen
id and visible field values, keyed by column header, never the whole tree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from hatp_journal.servers.fakeapp.pytest_fixtures import INSTALL_HINT, require_chromium

_CHILD = re.compile(r'^  - (?:rowheader|cell|columnheader)(?: ("(?:[^"\\]|\\.)*"))?', re.MULTILINE)


def _names(snapshot: str) -> list[str]:
    """Accessible names of a row's direct children, from its aria snapshot (YAML)."""
    return [json.loads(name) if name else "" for name in _CHILD.findall(snapshot)]


def fingerprint(page: Page, invoice_id: str, table: str = "Invoices") -> dict[str, str]:
    """The record's visible fields by column, read through the accessibility tree."""
    grid = page.get_by_role("table", name=table)
    headers = _names(grid.get_by_role("row").first.aria_snapshot())
    cells = _names(grid.get_by_role("row", name=invoice_id, exact=True).aria_snapshot())
    return {h: c for h, c in zip(headers, cells, strict=True) if h != "Actions"}


def _row(page: Page, invoice_id: str, table: str = "Invoices"):
    return page.get_by_role("table", name=table).get_by_role("row", name=invoice_id, exact=True)


@pytest.mark.browser
@pytest.mark.parametrize("layout", ["a", "b"])
def test_an_invoice_created_through_the_ui_reads_back_from_the_accessibility_tree(
    fake_app, browser_page, layout
):
    fake_app.set_layout(layout)
    page = browser_page
    page.goto(fake_app.url)

    page.get_by_label("Customer").fill('Hooli "West" <Ltd>')
    page.get_by_label("Amount").fill("321.5")
    page.get_by_role("button", name="Create invoice").click()

    expect(page.get_by_role("status")).to_have_text("INV-0004 created.")
    page.wait_for_load_state()  # the status comes before the table: read the table once it is whole
    assert fingerprint(page, "INV-0004") == {
        "Invoice": "INV-0004",
        "Customer": 'Hooli "West" <Ltd>',
        "Amount": "321.50",
        "Status": "Draft",
    }
    assert fake_app.invoice("INV-0004").customer == 'Hooli "West" <Ltd>'


@pytest.mark.browser
def test_a_row_fingerprint_keyed_by_column_is_the_same_in_both_layouts(fake_app, browser_page):
    page = browser_page
    page.goto(fake_app.url)
    snapshot_a = _row(page, "INV-0003").aria_snapshot()
    fingerprint_a = fingerprint(page, "INV-0003")

    fake_app.set_layout("b")
    page.set_viewport_size({"width": 480, "height": 800})
    page.reload()

    assert _row(page, "INV-0003").aria_snapshot() != snapshot_a
    assert fingerprint(page, "INV-0003") == fingerprint_a


@pytest.mark.browser
def test_delete_and_restore_through_the_ui_bring_the_record_back_to_its_fingerprint(fake_app, browser_page):
    page = browser_page
    page.goto(fake_app.url)
    before = fingerprint(page, "INV-0001")

    _row(page, "INV-0001").get_by_role("button", name="Delete").click()
    expect(_row(page, "INV-0001")).to_have_count(0)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Trash").click()
    _row(page, "INV-0001", "Trash").get_by_role("button", name="Restore").click()
    expect(page.get_by_role("status")).to_have_text("INV-0001 restored.")
    page.get_by_role("link", name="Invoices").click()
    page.wait_for_load_state()  # a click waits only until the next page starts loading

    assert fingerprint(page, "INV-0001") == before


@pytest.mark.browser
def test_a_faulty_restore_looks_successful_and_only_reading_the_record_again_shows_it_failed(
    fake_app, browser_page
):
    fake_app.set_faulty_restore(True)
    page = browser_page
    page.goto(fake_app.url)
    _row(page, "INV-0002").get_by_role("button", name="Delete").click()
    page.goto(f"{fake_app.url}/trash")

    _row(page, "INV-0002", "Trash").get_by_role("button", name="Restore").click()

    expect(page.get_by_role("status")).to_have_text("INV-0002 restored.")
    expect(_row(page, "INV-0002", "Trash")).to_have_count(1)
    page.goto(fake_app.url)
    expect(_row(page, "INV-0002")).to_have_count(0)


def test_a_missing_chromium_skips_with_the_install_hint_outside_ci(tmp_path):
    with pytest.raises(pytest.skip.Exception, match=re.escape(INSTALL_HINT)):
        require_chromium(tmp_path / "chromium", environ={"CI": "false"})


def test_a_missing_chromium_fails_when_ci_is_true(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=re.escape(INSTALL_HINT)):
        require_chromium(tmp_path / "chromium", environ={"CI": "true"})


def test_a_present_chromium_is_returned(tmp_path):
    browser = tmp_path / "chromium"
    browser.touch()

    assert require_chromium(browser, environ={"CI": "true"}) == browser
    assert isinstance(require_chromium(browser, environ={}), Path)
