"""The knobs: colleague edits, layout b, the clock, and the /_control API that turns them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import httpx2
import pytest

from hatp_journal.servers.fakeapp import FakeApp, InvalidField


def _fields(row: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in row.items() if name != "Actions"}


def test_a_colleague_edit_changes_the_record_and_records_who_changed_it(site):
    edited = site.app.colleague_edit("INV-0001", by="eve@acme.com", amount="1350.00")

    assert (edited.amount, edited.customer, edited.updated_by) == (
        Decimal("1350.00"),
        "Globex",
        "eve@acme.com",
    )
    assert site.table("/").rows["INV-0001"]["Amount"] == "1350.00"
    assert "eve@acme.com" in site.get("/invoices/INV-0001/edit").text


def test_a_colleague_edit_through_the_control_api_answers_the_new_ground_truth(site):
    response = site.control(
        "colleague-edit",
        {"invoice": "INV-0003", "by": "eve@acme.com", "customer": "Umbrella", "status": "Sent"},
    )

    assert response.status_code == 200
    assert response.json() | {"updatedAt": None} == {
        "id": "INV-0003",
        "customer": "Umbrella",
        "amount": "89.90",
        "status": "Sent",
        "updatedBy": "eve@acme.com",
        "updatedAt": None,
        "inTrash": False,
        "deletedAt": None,
        "keptUntil": None,
    }
    assert site.get("/_control/invoices/INV-0003").json()["customer"] == "Umbrella"
    assert site.table("/").rows["INV-0003"]["Status"] == "Sent"


@pytest.mark.parametrize(
    "body",
    [
        {"invoice": "INV-0001", "by": "eve@acme.com", "amount": "lots"},
        {"invoice": "INV-0001", "by": "eve@acme.com"},
        {"invoice": "INV-0001", "by": "", "amount": "1.00"},
        {"invoice": "INV-0001", "by": "eve@acme.com", "status": "Paid"},
        {"invoice": "INV-0001", "by": "eve@acme.com", "amount": 5},
    ],
    ids=["bad-amount", "no-fields", "no-author", "bad-status", "amount-not-a-string"],
)
def test_a_malformed_colleague_edit_answers_400_invalid_field_and_changes_nothing(site, body):
    before = site.app.invoice("INV-0001")

    response = site.control("colleague-edit", body)

    assert response.status_code == 400
    assert response.json()["error"] == "INVALID_FIELD"
    assert site.app.invoice("INV-0001") == before


def test_a_colleague_edit_of_an_unknown_invoice_answers_404(site):
    response = site.control("colleague-edit", {"invoice": "INV-0042", "by": "e", "amount": "1"})

    assert (response.status_code, response.json()["error"]) == (404, "NOT_FOUND")
    with pytest.raises(InvalidField):
        site.app.colleague_edit("INV-0001", by="eve@acme.com", amount="1,00")


def test_layout_b_renders_the_same_records_with_reordered_columns(site):
    layout_a = site.table("/")

    site.app.set_layout("b")
    layout_b = site.table("/")

    assert layout_b.headers != layout_a.headers
    assert sorted(layout_b.headers) == sorted(layout_a.headers)
    assert layout_b.headers[-1] == "Actions"
    assert {k: _fields(row) for k, row in layout_b.rows.items()} == {
        k: _fields(row) for k, row in layout_a.rows.items()
    }
    html = site.get("/").text
    assert "max-width: 34rem" in html
    # The form comes before the table, and each input before its label.
    assert html.index('aria-label="New invoice"') < html.index('aria-label="Invoices"')
    assert html.index('<input id="customer"') < html.index('<label for="customer">')


def test_layout_b_reorders_the_trash_columns_too(site):
    site.post("/invoices/INV-0001/delete")
    layout_a = site.table("/trash")

    site.control("layout", {"layout": "b"})
    layout_b = site.table("/trash")

    assert layout_b.headers != layout_a.headers
    assert layout_b.rows["INV-0001"]["Customer"] == layout_a.rows["INV-0001"]["Customer"]


def test_the_layout_can_be_chosen_at_start_and_switched_back_over_http(tmp_path):
    with (
        FakeApp(tmp_path / "b.db", layout="b") as app,
        httpx2.Client(base_url=app.url, timeout=5.0, verify=False) as client,
    ):
        assert 'class="layout-b"' in client.get("/").text

        state = client.post("/_control/layout", json={"layout": "a"}).json()

        assert state["layout"] == "a"
        assert 'class="layout-a"' in client.get("/").text
        assert client.post("/_control/layout", json={"layout": "c"}).status_code == 400


def test_the_clock_control_moves_or_sets_the_apps_time(site):
    start = datetime.fromisoformat(site.get("/_control/state").json()["now"])

    moved = site.control("clock", {"advanceDays": 31}).json()["now"]
    assert (datetime.fromisoformat(moved) - start).days == 31

    fixed = site.control("clock", {"now": "2027-03-01T09:00:00+00:00"}).json()["now"]
    assert datetime.fromisoformat(fixed) == datetime(2027, 3, 1, 9, tzinfo=UTC)
    assert site.app.now() == datetime(2027, 3, 1, 9, tzinfo=UTC)
    assert site.control("clock", {"now": "next tuesday"}).status_code == 400
    assert site.control("clock", {"advanceDays": True}).status_code == 400


def test_faulty_restore_can_be_switched_over_http(site):
    site.post("/invoices/INV-0002/delete")

    state = site.control("faulty-restore", {"enabled": True}).json()
    site.post("/trash/INV-0002/restore")

    assert state["faultyRestore"] is True
    assert site.app.invoice("INV-0002").in_trash


def test_control_posts_must_be_json(site):
    response = site.client.post("/_control/faulty-restore", data={"enabled": "true"})

    assert response.status_code == 415
    assert site.get("/_control/state").json()["faultyRestore"] is False


def test_the_control_api_does_not_exist_without_test_controls(tmp_path):
    with (
        FakeApp(tmp_path / "prod.db", test_controls=False) as app,
        httpx2.Client(base_url=app.url, timeout=5.0, verify=False) as client,
    ):
        assert client.get("/_control/state").status_code == 404
        assert client.post("/_control/faulty-restore", json={"enabled": True}).status_code == 404
        assert client.get("/").status_code == 200


def test_ground_truth_over_http_reports_trash_and_when_it_expires(site):
    site.app.set_clock(datetime(2027, 1, 1, tzinfo=UTC))
    site.post("/invoices/INV-0001/delete")

    truth = site.get("/_control/invoices/INV-0001").json()

    assert truth["inTrash"] is True
    assert datetime.fromisoformat(truth["keptUntil"]) == datetime(2027, 1, 31, tzinfo=UTC)
    site.app.advance_clock(31)
    assert site.get("/_control/invoices/INV-0001").status_code == 404


def test_reset_brings_back_the_seeded_invoices_and_the_starting_knobs(site):
    site.post("/invoices", customer="Hooli", amount="5")
    site.post("/invoices/INV-0001/delete")
    site.app.set_layout("b")
    site.app.set_faulty_restore(True)
    site.app.set_clock(datetime(2030, 1, 1, tzinfo=UTC))
    seeded = {"INV-0001", "INV-0002", "INV-0003"}

    state = site.control("reset", {}).json()

    assert (state["layout"], state["faultyRestore"]) == ("a", False)
    assert datetime.fromisoformat(state["now"]).year < 2030
    assert set(site.table("/").rows) == seeded
    assert site.table("/trash").rows == {}
    created = site.post("/invoices", customer="Hooli", amount="5")
    assert created.headers["location"].endswith("invoice=INV-0004")


def test_an_app_stopped_and_started_again_serves_at_the_same_url_with_its_data(tmp_path):
    app = FakeApp(tmp_path / "app.db").start()
    url = app.url
    app.colleague_edit("INV-0001", amount="1.00")
    app.stop()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(url, timeout=5.0, verify=False)

    app.start()
    try:
        assert app.url == url
        assert "1.00" in httpx2.get(url, timeout=5.0, verify=False).text
    finally:
        app.stop()
