"""Fingerprints read from the real accessibility tree of the fake app in headless chromium.

Uses only the toolkit's kit (``read_record`` and the ``fake_app``/``browser_page`` fixtures), as a
computer-use server author would.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import Page, expect

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.toolkit.ui import RecordView, read_record

pytestmark = pytest.mark.browser


def invoice(page: Page, invoice_id: str, table: str = "Invoices") -> RecordView:
    view = read_record(page.get_by_role("table", name=table, exact=True), invoice_id)
    assert view is not None, f"{invoice_id} is not shown in {table}"
    return view


def test_the_same_record_fingerprints_identically_in_both_layouts_and_window_sizes(
    fake_app: FakeApp, browser_page: Page
) -> None:
    fake_app.colleague_edit("INV-0001", customer="Hooli: \"West\" #1 \\ 'q'")
    page = browser_page
    page.goto(fake_app.url)
    wide = invoice(page, "INV-0001")
    row = page.get_by_role("row", name="INV-0001", exact=True)
    snapshot_a = row.aria_snapshot()

    fake_app.set_layout("b")
    page.set_viewport_size({"width": 480, "height": 800})
    page.reload()

    assert row.aria_snapshot() != snapshot_a  # the tree differs: columns moved, no row header
    assert invoice(page, "INV-0001") == wide
    assert wide.fields["Customer"] == "Hooli: \"West\" #1 \\ 'q'"


def test_a_record_in_trash_fingerprints_identically_in_both_layouts(
    fake_app: FakeApp, browser_page: Page
) -> None:
    page = browser_page
    page.goto(fake_app.url)
    page.get_by_role("row", name="INV-0002", exact=True).get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("INV-0002 moved to Trash.")
    page.get_by_role("link", name="Trash").click()
    expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    page.wait_for_load_state()  # the heading comes before the table: read the table once it is whole
    in_a = invoice(page, "INV-0002", "Trash")

    fake_app.set_layout("b")
    page.reload()

    assert invoice(page, "INV-0002", "Trash").fingerprint == in_a.fingerprint
    assert set(in_a.fields) == {"Invoice", "Customer", "Amount", "Status", "Deleted", "Kept until"}


@pytest.mark.parametrize(
    "change",
    [{"customer": "Globex Corp"}, {"amount": "1200.01"}, {"status": "Sent"}],
    ids=["customer", "amount", "status"],
)
def test_changing_any_visible_field_of_the_record_changes_its_fingerprint(
    fake_app: FakeApp, browser_page: Page, change: dict[str, str]
) -> None:
    browser_page.goto(fake_app.url)
    before = invoice(browser_page, "INV-0001").fingerprint

    fake_app.colleague_edit("INV-0001", **change)
    browser_page.reload()

    assert invoice(browser_page, "INV-0001").fingerprint != before


def test_changes_to_other_records_leave_the_fingerprint_alone(fake_app: FakeApp, browser_page: Page) -> None:
    page = browser_page
    page.goto(fake_app.url)
    before = invoice(page, "INV-0001").fingerprint

    fake_app.colleague_edit("INV-0002", customer="Initech GmbH", amount="1.00")
    fake_app.colleague_edit("INV-0003", status="Sent")
    page.get_by_label("Customer").fill("Hooli")
    page.get_by_label("Amount").fill("5")
    page.get_by_role("button", name="Create invoice").click()
    expect(page.get_by_role("status")).to_have_text("INV-0004 created.")
    page.get_by_role("row", name="INV-0003", exact=True).get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("INV-0003 moved to Trash.")
    page.wait_for_load_state()  # the status comes before the table: read the table once it is whole

    assert invoice(page, "INV-0001").fingerprint == before


# Customer names the app accepts, with what trips YAML and quoting: quotes, colons, hashes, dashes.
customers = st.text(
    st.sampled_from(list("abcXYZ019 -:#'\"\\,.&*[]{}!?%@|>`~éß中")), min_size=1, max_size=30
).filter(lambda name: name.strip() == name and "  " not in name)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(customer=customers)
def test_any_customer_name_reads_back_exactly_and_its_fingerprint_follows_it(
    fake_app: FakeApp, browser_page: Page, customer: str
) -> None:
    browser_page.goto(fake_app.url)
    before = invoice(browser_page, "INV-0003")

    fake_app.colleague_edit("INV-0003", customer=customer)
    browser_page.reload()
    after = invoice(browser_page, "INV-0003")

    assert after.fields["Customer"] == customer
    assert (after.fingerprint == before.fingerprint) == (customer == before.fields["Customer"])
    fake_app.colleague_edit("INV-0003", customer="Umbrella Corp")  # fixtures run once per test
