"""The invoice list over real HTTP: create, edit, send, and what bad input does (and doesn't)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hatp_journal.servers.fakeapp import APP_USER

SEEDED = {
    "INV-0001": {"Invoice": "INV-0001", "Customer": "Globex", "Amount": "1200.00", "Status": "Draft"},
    "INV-0002": {"Invoice": "INV-0002", "Customer": "Initech", "Amount": "450.00", "Status": "Sent"},
    "INV-0003": {
        "Invoice": "INV-0003",
        "Customer": "Umbrella Corp",
        "Amount": "89.90",
        "Status": "Draft",
    },
}


def _fields(row: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in row.items() if name != "Actions"}


def test_a_new_database_is_seeded_with_invoices_shown_by_their_on_screen_ids(site):
    table = site.table("/")

    assert table.headers == ["Invoice", "Customer", "Amount", "Status", "Actions"]
    assert {invoice_id: _fields(row) for invoice_id, row in table.rows.items()} == SEEDED


def test_creating_an_invoice_adds_a_draft_row_and_redirects_with_a_status_line(site):
    response = site.post("/invoices", customer="Hooli", amount="321.5")

    page = site.follow(response)
    assert page.statuses == ["INV-0004 created."]
    assert _fields(page.tables["Invoices"].rows["INV-0004"]) == {
        "Invoice": "INV-0004",
        "Customer": "Hooli",
        "Amount": "321.50",
        "Status": "Draft",
    }
    created = site.app.invoice("INV-0004")
    assert created is not None
    assert (created.customer, created.amount, created.updated_by) == ("Hooli", Decimal("321.50"), APP_USER)


def test_editing_an_invoice_changes_customer_and_amount_and_the_edit_page_shows_them(site):
    assert site.page("/invoices/INV-0001/edit").alerts == []

    response = site.post("/invoices/INV-0001", customer="Globex Corp", amount="1300")

    assert response.status_code == 303
    assert _fields(site.table("/").rows["INV-0001"]) == {
        "Invoice": "INV-0001",
        "Customer": "Globex Corp",
        "Amount": "1300.00",
        "Status": "Draft",
    }
    edit_page = site.get("/invoices/INV-0001/edit").text
    assert 'value="Globex Corp"' in edit_page
    assert 'value="1300.00"' in edit_page


def test_sending_an_invoice_marks_it_sent_and_the_app_offers_no_way_back(site):
    assert "Send invoice" in site.table("/").rows["INV-0001"]["Actions"]

    assert site.post("/invoices/INV-0001/send").status_code == 303

    row = site.table("/").rows["INV-0001"]
    assert row["Status"] == "Sent"
    assert "Send invoice" not in row["Actions"]
    # Sending again is refused rather than repeated, and nothing sets it back to Draft.
    assert site.post("/invoices/INV-0001/send").status_code == 409
    assert site.post("/invoices/INV-0001", customer="Globex", amount="1200").status_code == 303
    assert site.app.invoice("INV-0001").status == "Sent"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/invoices/INV-0099/edit"),
        ("POST", "/invoices/INV-0099"),
        ("POST", "/invoices/INV-0099/send"),
        ("POST", "/invoices/INV-0099/delete"),
        ("POST", "/trash/INV-0099/restore"),
        ("GET", "/invoices/not-an-id/edit"),
        ("POST", "/invoices/INV-1'--/delete"),
        ("GET", "/no/such/page"),
    ],
)
def test_unknown_invoice_ids_and_pages_answer_a_404_page_and_change_nothing(site, method, path):
    before = site.app.invoices()

    response = site.client.request(method, path, data={"customer": "X", "amount": "1"})

    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert site.read(response).alerts != []
    assert site.app.invoices() == before


@pytest.mark.parametrize("amount", ["12,50", "abc", "-5", "1.234", "", "1e3", "9999999999"])
def test_creating_with_a_malformed_amount_answers_400_naming_the_field_and_creates_nothing(site, amount):
    response = site.post("/invoices", customer="Hooli", amount=amount)

    assert response.status_code == 400
    page = site.read(response)
    assert [alert["data-error-field"] for alert in page.alerts] == ["amount"]
    assert 'aria-invalid="true"' in response.text
    assert site.app.invoice("INV-0004") is None
    assert set(page.tables["Invoices"].rows) == set(SEEDED)


def test_editing_with_a_malformed_amount_answers_400_naming_the_field_and_changes_nothing(site):
    before = site.app.invoice("INV-0001")

    response = site.post("/invoices/INV-0001", customer="Renamed", amount="twelve")

    assert response.status_code == 400
    assert [alert["data-error-field"] for alert in site.read(response).alerts] == ["amount"]
    assert site.app.invoice("INV-0001") == before


@pytest.mark.parametrize("customer", ["", "   ", "x" * 81, "tab\there"])
def test_a_missing_or_malformed_customer_answers_400_naming_customer(site, customer):
    response = site.post("/invoices", customer=customer, amount="10")

    assert response.status_code == 400
    assert [alert["data-error-field"] for alert in site.read(response).alerts] == ["customer"]
    assert site.app.invoice("INV-0004") is None


def test_user_provided_text_is_html_escaped_on_every_page(site):
    hostile = '<script>alert(1)</script>"><img src=x>'
    site.post("/invoices", customer=hostile, amount="1")
    site.post("/invoices/INV-0001", customer="Globex", amount="<b>1</b>")  # refilled on 400

    pages = [
        site.get("/").text,
        site.get("/invoices/INV-0004/edit").text,
        site.post("/invoices/INV-0001", customer=hostile, amount="<b>1</b>").text,
    ]
    site.post("/invoices/INV-0004/delete")
    pages.append(site.get("/trash").text)

    for html in pages:
        assert "<script>" not in html
        assert "<img" not in html
        assert "<b>1" not in html
    assert site.table("/trash").rows["INV-0004"]["Customer"] == hostile


def test_form_posts_from_another_origin_are_refused_and_change_nothing(site):
    before = site.app.invoices()

    foreign = site.client.post("/invoices/INV-0001/delete", headers={"Origin": "http://evil.example"})
    cross_site = site.client.post(
        "/invoices", data={"customer": "X", "amount": "1"}, headers={"Sec-Fetch-Site": "cross-site"}
    )

    assert (foreign.status_code, cross_site.status_code) == (403, 403)
    assert site.app.invoices() == before
    own_origin = site.client.post("/invoices/INV-0001/delete", headers={"Origin": site.app.url})
    assert own_origin.status_code == 303


def test_a_form_post_that_is_not_form_encoded_is_refused(site):
    response = site.client.post("/invoices", json={"customer": "X", "amount": "1"})

    assert response.status_code == 415
    assert site.app.invoice("INV-0004") is None


def test_get_on_an_address_that_only_takes_posts_answers_405_and_changes_nothing(site):
    response = site.get("/invoices/INV-0001/delete")

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert not site.app.invoice("INV-0001").in_trash
