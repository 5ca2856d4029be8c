"""The pages speak plainly: who a side effect reaches, statuses in words, where a refused person goes next."""

from __future__ import annotations

import re
from datetime import timedelta

from http_browser import Browser, code, form_fields, signed_in
from support.undo_org import DANA, LEE
from web_org import Approver

from hatp_journal.recorder.undo.side_effects import recipients
from hatp_journal.recorder.web.views import request_words, status_words

ATTENDEES = {"attendees": ["buyer@globex.com", "lee@acme.com"], "summary": "Kickoff"}


def test_a_side_effect_names_the_addresses_of_the_argument_it_speaks_of() -> None:
    told = recipients("attendees get a cancellation notice", ATTENDEES)

    assert told == ["buyer@globex.com", "lee@acme.com"]


def test_a_side_effect_that_names_no_argument_names_nobody() -> None:
    assert recipients("the invoice moves to the Trash", ATTENDEES) == []
    assert recipients("attendees get a notice", "not the arguments of a call") == []


def test_statuses_and_requests_read_as_words_and_unknown_codes_stay_as_they_are() -> None:
    assert status_words("notReversible") == "cannot be undone"
    assert status_words("reversed") == "undone"
    assert status_words("somethingNew") == "somethingNew"
    assert request_words("from 1") == "everything from step 1 on"
    assert request_words("steps 2, 5") == "steps 2, 5"


def see_link(html: str) -> str:
    found = re.search(r'<a href="([^"]+)" id="see">', html)
    return found.group(1) if found else "no link"


def test_a_decision_from_a_second_tab_that_did_not_count_links_to_the_decision_that_did(
    approver: Approver,
) -> None:
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)
    first_tab = form_fields(browser.get(f"/plans/{ref}")[1])
    second_tab = form_fields(browser.get(f"/plans/{ref}")[1])
    browser.post(f"/plans/{ref}", {**first_tab, "decision": "deny"})

    status, html = browser.post(f"/plans/{ref}", {**second_tab, "decision": "approve"})

    assert (status, code(html)) == (200, "NOT_COUNTED")
    assert see_link(html) == f"/plans/{ref}"
    assert "it is denied" in html


def test_a_used_sign_in_link_says_how_to_get_a_new_one(approver: Approver) -> None:
    link = approver.web.link(LEE)
    Browser(approver).get(link)

    status, html = Browser(approver).get(link)

    assert (status, code(html)) == (401, "SIGNIN_USED")
    assert "hatp-recorder web-link --as" in html


def test_an_approval_refused_after_one_that_counted_links_to_its_outcome_and_is_not_timestamped_before_it(
    approver: Approver,
) -> None:
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    browser = signed_in(approver)
    other_tab = form_fields(browser.get(f"/plans/{ref}")[1])
    code_, out, err = approver.org.approve(ref)
    assert code_ == 0, out + err
    approver.clock.ahead = -timedelta(minutes=5)  # this tab's click was made before that approval

    status, html = browser.post(f"/plans/{ref}", {**other_tab, "decision": "approve"})

    assert (status, code(html)) == (200, "NOT_COUNTED")
    assert see_link(html) == f"/plans/{ref}/outcome"
    decided = [e.body for e in approver.org.entries(run) if e.kind == "decision"]
    assert [d["counted"] for d in decided] == [True, False]
    counted_at, refused_at = (d["approval"]["at"] for d in decided)
    assert refused_at >= counted_at
