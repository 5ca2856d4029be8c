"""Trash: delete and restore, the retention window on a movable clock, and the faulty restore."""

from __future__ import annotations

from datetime import timedelta

import httpx2

from hatp_journal.servers.fakeapp import FakeApp


def test_deleting_an_invoice_moves_it_to_trash_and_restore_brings_it_back(site):
    before = site.table("/").rows["INV-0001"]

    deleted = site.follow(site.post("/invoices/INV-0001/delete"))

    assert deleted.statuses == ["INV-0001 moved to Trash."]
    assert "INV-0001" not in deleted.tables["Invoices"].rows
    assert site.table("/trash").rows["INV-0001"]["Customer"] == "Globex"
    assert site.app.invoice("INV-0001").in_trash

    restored = site.follow(site.post("/trash/INV-0001/restore"))

    assert restored.statuses == ["INV-0001 restored."]
    assert "INV-0001" not in restored.tables["Trash"].rows
    assert site.table("/").rows["INV-0001"] == before
    assert not site.app.invoice("INV-0001").in_trash


def test_trash_shows_when_each_deleted_invoice_will_be_purged(site):
    site.post("/invoices/INV-0002/delete")
    deleted_at = site.app.invoice("INV-0002").deleted_at

    row = site.table("/trash").rows["INV-0002"]

    assert row["Deleted"] == deleted_at.strftime("%Y-%m-%d %H:%M UTC")
    assert row["Kept until"] == (deleted_at + timedelta(days=30)).strftime("%Y-%m-%d %H:%M UTC")


def test_trash_keeps_an_invoice_for_the_retention_window_and_then_it_cannot_be_restored(site):
    site.post("/invoices/INV-0003/delete")
    deleted_at = site.app.invoice("INV-0003").deleted_at

    site.app.set_clock(deleted_at + timedelta(days=30))
    assert "INV-0003" in site.table("/trash").rows

    site.app.set_clock(deleted_at + timedelta(days=30, minutes=1))

    assert "INV-0003" not in site.table("/trash").rows
    assert site.post("/trash/INV-0003/restore").status_code == 404
    assert site.app.invoice("INV-0003") is None
    assert "INV-0003" not in site.table("/").rows


def test_the_retention_window_is_configurable(tmp_path):
    with (
        FakeApp(tmp_path / "short.db", retention_days=2) as app,
        httpx2.Client(base_url=app.url, timeout=5.0, verify=False) as client,
    ):
        client.post("/invoices/INV-0001/delete")
        app.advance_clock(1.5)
        assert "stay here for 2 days" in client.get("/trash").text
        assert app.invoice("INV-0001").in_trash

        app.advance_clock(1)

        assert app.invoice("INV-0001") is None
        assert client.post("/trash/INV-0001/restore").status_code == 404


def test_a_purged_invoice_id_is_never_given_to_a_new_invoice(site):
    site.post("/invoices/INV-0003/delete")
    site.app.advance_clock(31)

    response = site.post("/invoices", customer="Hooli", amount="5")

    assert response.headers["location"].endswith("invoice=INV-0004")
    assert site.app.invoice("INV-0003") is None


def test_faulty_restore_reports_success_but_leaves_the_invoice_in_trash(site):
    site.post("/invoices/INV-0001/delete")
    site.app.set_faulty_restore(True)

    response = site.post("/trash/INV-0001/restore")

    assert response.status_code == 303
    assert site.follow(response).statuses == ["INV-0001 restored."]
    assert "INV-0001" in site.table("/trash").rows
    assert "INV-0001" not in site.table("/").rows
    assert site.app.invoice("INV-0001").in_trash

    site.app.set_faulty_restore(False)
    site.post("/trash/INV-0001/restore")
    assert not site.app.invoice("INV-0001").in_trash


def test_restoring_an_invoice_that_is_not_in_trash_answers_404_even_when_restore_is_faulty(site):
    site.app.set_faulty_restore(True)

    response = site.post("/trash/INV-0001/restore")

    assert response.status_code == 404
    assert site.read(response).alerts != []


def test_deleting_an_invoice_already_in_trash_answers_404_and_keeps_its_deletion_time(site):
    site.post("/invoices/INV-0001/delete")
    deleted_at = site.app.invoice("INV-0001").deleted_at
    site.app.advance_clock(5)

    assert site.post("/invoices/INV-0001/delete").status_code == 404
    assert site.get("/invoices/INV-0001/edit").status_code == 404
    assert site.app.invoice("INV-0001").deleted_at == deleted_at
