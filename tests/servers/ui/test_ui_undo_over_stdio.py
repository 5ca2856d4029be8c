"""``hatp-ui serve`` over stdio, driving the fake app in headless chromium: every call and every
undo goes through the app's screens. Ground truth comes from the app's own store (``fake_app``),
or from a fresh read through the UI where the test says so."""

from __future__ import annotations

import re

import pytest

from hatp_journal._shared.clock import utc_now
from hatp_journal.recorder.policy import CallFacts, MoneyLedger, decide, parse_policy
from hatp_journal.servers.ui import SEND_REASON, SEND_REMEDY, evidence_file
from hatp_journal.servers.ui.evidence import matches
from hatp_journal.toolkit.signing import VerifyKey, verify_answer, verify_call
from hatp_journal.toolkit.wire import Declaration, KeysAnswer

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

FINGERPRINT = re.compile(r"fp-[0-9a-f]{32}")
ACTING = ("create_invoice", "edit_invoice", "delete_invoice", "send_invoice")


async def test_create_then_undo_leaves_the_invoice_gone_as_a_fresh_read_shows(fake_app, ui) -> None:
    arguments = {"customer": "Hooli", "amount": "321.5"}
    created = await ui.act("create_invoice", **arguments)
    effect = created["effect"]

    assert effect["summary"] == "Invoice INV-0004 created: Customer Hooli, Amount 321.50, Status Draft"
    assert effect["resource"] == "ui://fakeapp/invoice/INV-0004"
    assert "before" not in effect
    assert FINGERPRINT.fullmatch(effect["version"])
    assert (await ui.invoice("INV-0004"))["fingerprint"] == effect["version"]
    keys_reply = await ui.call("hatp_journal_keys")
    keys = {key.kid: VerifyKey.from_wire(key) for key in KeysAnswer.model_validate(keys_reply.journal).keys}
    assert verify_call(created, "create_invoice", arguments, keys)

    undo = await ui.undo(created)

    assert not undo.error, undo.journal
    assert undo.journal["status"] == "done"
    assert undo.journal["versionFound"] == effect["version"]
    assert verify_answer(undo.journal, keys)
    fresh = await ui.invoice("INV-0004")
    assert (fresh["found"], fresh["shownIn"]) == (True, "Trash")  # gone from the list, as the app deletes
    assert [invoice.id for invoice in fake_app.invoices()] == ["INV-0001", "INV-0002", "INV-0003"]
    assert (await ui.undo(created)).journal == undo.journal  # a retry gets the first answer, acts once
    assert [invoice.id for invoice in fake_app.trash()] == ["INV-0004"]


async def test_delete_then_undo_restores_it_from_trash_with_the_same_fields_and_keeps_screenshots(
    fake_app, ui
) -> None:
    before = await ui.invoice("INV-0001")
    deleted = await ui.act("delete_invoice", invoice_id="INV-0001")

    assert deleted["effect"]["before"] == before["fingerprint"]
    assert deleted["effect"]["summary"].startswith(
        "Invoice INV-0001 (Customer Globex, Amount 1200.00, Status Draft) moved to Trash, kept until "
    )
    assert fake_app.invoice("INV-0001").in_trash

    undo = await ui.undo(deleted)

    assert undo.journal["status"] == "done", undo.journal
    assert undo.journal["sideEffects"] == ["INV-0001 restored from the app's Trash"]
    after = await ui.invoice("INV-0001")
    assert (after["shownIn"], after["fields"], after["fingerprint"]) == (
        "Invoices",
        before["fields"],
        before["fingerprint"],
    )
    assert not fake_app.invoice("INV-0001").in_trash
    # Screenshots before and after, pinned by digest in the signed receipt.
    evidence = undo.journal["evidence"]
    names = [evidence_file(reference)[1].name for reference in evidence]
    assert ["before-undo" in names[0], "after-undo" in names[1]] == [True, True]
    assert all(matches(reference) for reference in evidence)
    assert all(evidence_file(reference)[1].read_bytes().startswith(b"\x89PNG") for reference in evidence)


async def test_an_edit_is_undone_by_typing_the_old_values_back(fake_app, ui) -> None:
    edited = await ui.act("edit_invoice", invoice_id="INV-0003", customer="Umbrella Ltd", amount="99.00")

    assert edited["effect"]["summary"] == (
        "Invoice INV-0003 Customer: Umbrella Corp → Umbrella Ltd; Amount: 89.90 → 99.00"
    )
    assert edited["effect"]["changes"] == [
        {"field": "Customer", "before": "Umbrella Corp", "after": "Umbrella Ltd"},
        {"field": "Amount", "before": "89.90", "after": "99.00"},
    ]
    undo = await ui.undo(edited)

    assert undo.journal["status"] == "done", undo.journal
    assert undo.journal["versionLeft"] == edited["effect"]["before"]
    invoice = fake_app.invoice("INV-0003")
    assert (invoice.customer, str(invoice.amount)) == ("Umbrella Corp", "89.90")


async def test_after_a_colleagues_edit_undo_is_a_conflict_that_changes_nothing(fake_app, ui) -> None:
    edited = await ui.act("edit_invoice", invoice_id="INV-0001", amount="1350.00")
    fake_app.colleague_edit("INV-0001", by="eve@acme.com", amount="1400.00")

    check = await ui.check(edited)
    undo = await ui.undo(edited)

    assert check.journal["status"] == "conflict"
    assert undo.error
    assert undo.code == "UNDO_CONFLICT"
    assert undo.journal["changedBy"] == "eve@acme.com"
    assert undo.journal["changes"] == [{"field": "Amount", "expected": "1350.00", "now": "1400.00"}]
    invoice = fake_app.invoice("INV-0001")
    assert (str(invoice.amount), invoice.updated_by) == ("1400.00", "eve@acme.com")


async def test_a_faulty_restore_is_unverified_and_reported_as_failed_never_as_reversed(fake_app, ui) -> None:
    deleted = await ui.act("delete_invoice", invoice_id="INV-0002")
    fake_app.set_faulty_restore(True)

    undo = await ui.undo(deleted)

    assert undo.error
    assert undo.code == "UNDO_UNVERIFIED"
    assert undo.journal["status"] == "unverified"
    assert "versionLeft" not in undo.journal
    assert fake_app.invoice("INV-0002").in_trash
    assert len(undo.journal["evidence"]) == 2  # the screenshots show what the app did (nothing)


async def test_an_invoice_purged_from_trash_is_a_conflict_not_a_crash(fake_app, ui) -> None:
    deleted = await ui.act("delete_invoice", invoice_id="INV-0003")
    fake_app.advance_clock(31)  # past the app's retention: the app purges it

    undo = await ui.undo(deleted)

    assert undo.code == "UNDO_CONFLICT"
    assert undo.journal["message"] == "the resource no longer exists"
    assert fake_app.invoice("INV-0003") is None


async def test_while_the_app_is_down_undo_fails_having_done_nothing_and_a_later_attempt_succeeds(
    fake_app, ui
) -> None:
    created = await ui.act("create_invoice", customer="Hooli", amount="5")
    fake_app.stop()
    try:
        check = await ui.check(created)
        failed = await ui.undo(created)
    finally:
        fake_app.start()  # same URL

    assert (check.journal["status"], check.code) == ("failed", "UNDO_FAILED")
    assert (failed.error, failed.code) == (True, "UNDO_FAILED")
    assert not fake_app.invoice("INV-0004").in_trash
    retried = await ui.undo(created, requestId="the app is back")
    assert retried.journal["status"] == "done", retried.journal
    assert fake_app.invoice("INV-0004").in_trash


async def test_send_invoice_is_declared_none_with_reason_and_remedy_and_carries_no_token(
    fake_app, ui
) -> None:
    declared = (await ui.declarations())["send_invoice"]
    sent = await ui.act("send_invoice", invoice_id="INV-0001")

    assert declared["undo"] == {"kind": "none", "via": "ui", "sideEffects": []}
    assert (declared["reason"], declared["remedy"]) == (SEND_REASON, SEND_REMEDY)
    assert sent["undo"]["kind"] == "none"
    assert "compensationToken" not in sent
    assert sent["effect"]["summary"] == "Invoice INV-0001 sent to Globex; Status: Draft → Sent"
    assert fake_app.invoice("INV-0001").status == "Sent"


async def test_every_acting_tool_is_declared_via_ui_with_the_apps_trash_retention_as_window(ui) -> None:
    declarations = await ui.declarations()

    for tool in ("create_invoice", "edit_invoice", "delete_invoice"):
        assert declarations[tool]["undo"]["kind"] == "compensate"
        assert declarations[tool]["undo"]["via"] == "ui"
        assert declarations[tool]["undo"]["window"] == "P30D"
    assert declarations["get_invoice"]["read"] is True
    assert declarations["list_invoices"]["read"] is True


async def test_the_recorders_default_policy_asks_before_every_ui_action_even_where_undo_is_allowed(
    ui,
) -> None:
    declarations = await ui.declarations()
    lenient = parse_policy('{"autonomy": {"compensate": "allow", "none": "allow", "read": "allow"}}')

    for policy in (parse_policy("{}"), lenient):
        for tool in ACTING:
            call = CallFacts.from_declaration(
                Declaration.model_validate(declarations[tool]), server="ui", tool=tool, at=utc_now()
            )
            decision = decide(policy, call, MoneyLedger())
            assert decision.action == "ask", tool
            assert "UI_UNDO" in [reason.code for reason in decision.reasons] or call.kind == "none"
    read = CallFacts.from_declaration(
        Declaration.model_validate(declarations["get_invoice"]), server="ui", tool="get_invoice", at=utc_now()
    )
    assert decide(lenient, read, MoneyLedger()).action == "allow"


async def test_input_the_app_refuses_is_tool_failed_naming_the_field_with_no_token(fake_app, ui) -> None:
    bad_amount = await ui.call("create_invoice", customer="Hooli", amount="twelve")
    no_customer = await ui.call("create_invoice", customer="", amount="12")

    assert (bad_amount.error, bad_amount.code) == (True, "TOOL_FAILED")
    assert bad_amount.data["data"]["field"] == "amount"
    assert bad_amount.data["data"]["problem"] == "invalid_input"
    assert no_customer.data["data"]["field"] == "customer"
    assert "compensationToken" not in bad_amount.journal
    assert len(fake_app.invoices()) == 3


async def test_an_action_the_screens_do_not_offer_is_tool_failed_and_nothing_is_journaled(
    fake_app, ui
) -> None:
    missing = await ui.call("delete_invoice", invoice_id="INV-0042")
    sent_already = await ui.call("send_invoice", invoice_id="INV-0002")
    nothing_to_change = await ui.call("edit_invoice", invoice_id="INV-0001")
    malformed = await ui.call("delete_invoice", invoice_id="42")

    assert (missing.code, missing.data["data"]["problem"]) == ("TOOL_FAILED", "not_found")
    assert (sent_already.code, sent_already.data["data"]["problem"]) == ("TOOL_FAILED", "not_sendable")
    assert nothing_to_change.code == "TOOL_FAILED"
    assert malformed.code == "INVALID_ARGUMENTS"
    assert not any(
        "compensationToken" in reply.journal for reply in (missing, sent_already, nothing_to_change)
    )
    assert [invoice.updated_by for invoice in fake_app.invoices()] == ["dana@acme.com"] * 3
