"""The approver over plain HTTP: sign-in links, sessions, CSRF, stale and repeated forms.

No browser here (fast); each refusal is checked by its stable code and by what the record holds.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from http_browser import Browser, code, decisions, form_fields, signed_in
from support.undo_org import DANA, LEE
from web_org import Approver, HeldAgent, policy_that_asks_before_publishing

from hatp_journal.recorder.cli.command_line import main


@pytest.fixture
def planned(approver: Approver) -> tuple[str, str]:
    """(run, plan ref): one put, and a plan to undo it waiting for the team lead."""
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    ref, _ = approver.org.plan(run, "--from", "1", by=DANA)
    return run, ref


def test_pages_need_a_sign_in(approver: Approver) -> None:
    status, html = Browser(approver).get("/asks")

    assert (status, code(html)) == (401, "SIGNIN_REQUIRED")


def test_an_expired_sign_in_link_is_refused(approver: Approver) -> None:
    link = approver.web.link(LEE, valid_for=timedelta(seconds=-1))

    status, html = Browser(approver).get(link)

    assert (status, code(html)) == (401, "SIGNIN_EXPIRED")


def test_a_sign_in_link_works_once(approver: Approver) -> None:
    link = approver.web.link(LEE)
    Browser(approver).get(link)

    status, html = Browser(approver).get(link)

    assert (status, code(html)) == (401, "SIGNIN_USED")


def test_a_tampered_sign_in_link_is_refused(approver: Approver) -> None:
    link = approver.web.link(DANA)
    mac = link.partition("token=")[2].partition(".")[2]
    forged = approver.web.link(LEE).partition("token=")[2].partition(".")[0] + "." + mac

    status, html = Browser(approver).get(f"/signin?token={forged}")

    assert (status, code(html)) == (401, "SIGNIN_INVALID")


def test_a_sign_in_expires_and_then_asks_to_sign_in_again(approver: Approver) -> None:
    browser = signed_in(approver)
    approver.clock.ahead = timedelta(hours=9)

    status, html = browser.get("/asks")

    assert (status, code(html)) == (401, "SIGNIN_REQUIRED")


def test_a_form_without_the_sessions_csrf_token_decides_nothing(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])

    status, html = browser.post(f"/plans/{ref}", {**fields, "csrf": "guessed", "decision": "deny"})

    assert (status, code(html)) == (403, "CSRF_FAILED")
    assert decisions(approver, run) == []


def test_a_post_from_another_origin_decides_nothing(approver: Approver, planned: tuple[str, str]) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])

    status, html = browser.post(
        f"/plans/{ref}", {**fields, "decision": "deny"}, origin="http://elsewhere.test"
    )

    assert (status, code(html)) == (403, "CROSS_SITE")
    assert decisions(approver, run) == []


def test_a_form_sent_twice_records_exactly_one_decision(approver: Approver, planned: tuple[str, str]) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = {**form_fields(browser.get(f"/plans/{ref}")[1]), "decision": "deny"}
    first = browser.post(f"/plans/{ref}", fields)

    status, html = browser.post(f"/plans/{ref}", fields)

    assert code(first[1]) == "COUNTED"
    assert (status, code(html)) == (409, "FORM_USED")
    assert decisions(approver, run) == [True]


def test_a_form_altered_to_name_another_plan_is_stale_and_decides_nothing(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])

    status, html = browser.post(f"/plans/{ref}", {**fields, "digest": "sha256:00", "decision": "deny"})

    assert (status, code(html)) == (409, "FORM_STALE")
    assert decisions(approver, run) == []


def test_a_form_the_page_never_gave_out_is_stale(approver: Approver, planned: tuple[str, str]) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])

    status, html = browser.post(f"/plans/{ref}", {**fields, "form": "made-up", "decision": "deny"})

    assert (status, code(html)) == (409, "FORM_STALE")
    assert decisions(approver, run) == []


def test_a_person_whose_key_the_approver_does_not_hold_is_told_and_nothing_is_recorded(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])
    (approver.org.root / "lee.key").unlink()

    status, html = browser.post(f"/plans/{ref}", {**fields, "decision": "deny"})

    assert (status, code(html)) == (403, "NO_KEY")
    assert decisions(approver, run) == []


def test_web_link_prints_a_link_for_people_in_the_directory_only(
    approver: Approver, capfd: pytest.CaptureFixture[str]
) -> None:
    config = str(approver.org.config)
    capfd.readouterr()
    assert main(["--config", config, "web-link", "--as", LEE]) == 0
    link = capfd.readouterr().out.strip()
    assert main(["--config", config, "web-link", "--as", "human://acme.com/nobody"]) == 2
    assert "NOT_PERMITTED" in capfd.readouterr().err

    status, html = Browser(approver).get(link.replace("http://127.0.0.1:8766", approver.url))

    assert status == 200
    assert "signed in as human://acme.com/lee" in html


def test_the_page_of_a_run_that_does_not_exist_is_not_found(approver: Approver) -> None:
    browser = signed_in(approver)

    assert [code(browser.get(path)[1]) for path in ("/runs/run_nope", "/asks/run_nope/e1")] == [
        "NOT_FOUND"
    ] * 2
    assert browser.get("/runs/run_nope")[0] == 404


def test_the_outcome_of_a_plan_that_has_not_run_is_not_found(
    approver: Approver, planned: tuple[str, str]
) -> None:
    _, ref = planned
    browser = signed_in(approver)

    status, html = browser.get(f"/plans/{ref}/outcome")

    assert (status, code(html)) == (404, "NOT_FOUND")


def test_a_call_entry_shown_as_a_plan_is_refused_as_an_unknown_plan(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, _ = planned
    browser = signed_in(approver)

    status, html = browser.get(f"/plans/{run}/e1")

    assert (status, code(html)) == (409, "UNKNOWN_PLAN")


def test_a_decision_that_is_neither_approve_nor_deny_is_stale_and_the_form_still_works(
    approver: Approver, planned: tuple[str, str]
) -> None:
    run, ref = planned
    browser = signed_in(approver)
    fields = form_fields(browser.get(f"/plans/{ref}")[1])

    status, html = browser.post(f"/plans/{ref}", {**fields, "decision": "maybe"})
    assert (status, code(html)) == (409, "FORM_STALE")
    assert decisions(approver, run) == []
    _, again = browser.post(f"/plans/{ref}", {**fields, "decision": "deny"})

    assert code(again) == "COUNTED"
    assert decisions(approver, run) == [True]


def test_asking_for_an_undo_without_a_step_is_stale_and_plans_nothing(approver: Approver) -> None:
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    browser = signed_in(approver, DANA)
    fields = form_fields(browser.get(f"/runs/{run}")[1])

    status, html = browser.post(f"/runs/{run}/plan", {**fields, "from": "the start"})

    assert (status, code(html)) == (409, "FORM_STALE")
    assert not [e for e in approver.org.entries(run) if e.kind == "plan"]


def test_asking_for_an_undo_of_a_step_out_of_range_is_refused_and_plans_nothing(approver: Approver) -> None:
    run = approver.org.agent([("chain_put", {"key": "a", "value": "1"})])
    browser = signed_in(approver, DANA)
    fields = form_fields(browser.get(f"/runs/{run}")[1])

    status, html = browser.post(f"/runs/{run}/plan", {**fields, "from": "7"})

    assert (status, code(html)) == (409, "STEP_OUT_OF_RANGE")
    assert not [e for e in approver.org.entries(run) if e.kind == "plan"]


def test_an_ask_form_altered_to_name_another_call_is_stale_and_the_call_stays_held(
    approver: Approver,
) -> None:
    policy_that_asks_before_publishing(approver.org)
    approver.agent([("chain_put", {"key": "a", "value": "1"})])
    with HeldAgent(approver.org, "chain_publish", {"key": "a"}) as agent:
        ref = f"{agent.run}/{agent.first['structured']['ask']}"
        browser = signed_in(approver)
        fields = form_fields(browser.get(f"/asks/{ref}")[1])

        status, html = browser.post(f"/asks/{ref}", {**fields, "digest": "sha256:00", "decision": "approve"})
        second = agent.call_again()

    assert (status, code(html)) == (409, "FORM_STALE")
    assert decisions(approver, agent.run) == []
    assert second["structured"]["status"] == "pending_approval"


def with_host(approver: Approver, path: str, host: str) -> tuple[int, str]:
    """GET ``path`` from the approver's own address, saying ``Host: host`` (as a page whose DNS name
    was rebound to 127.0.0.1 would)."""
    request = urllib.request.Request(approver.url + path, headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost:{port}", "127.0.0.1:1"])
def test_a_page_asked_for_under_another_host_is_refused_and_changes_nothing(
    approver: Approver, host: str
) -> None:
    port = approver.url.rsplit(":", 1)[1]
    link = approver.web.link(LEE).removeprefix(approver.url)

    status, html = with_host(approver, link, host.format(port=port))
    signed = signed_in_with(approver, link)

    assert (status, code(html)) == (421, "HOST_NOT_SERVED")
    assert "signed in as" not in html
    assert signed == 200  # the refused request did not use the one-time link


def test_the_host_it_serves_is_answered(approver: Approver) -> None:
    host = approver.url.removeprefix("http://")

    status, html = with_host(approver, "/asks", host)

    assert (status, code(html)) == (401, "SIGNIN_REQUIRED")


def signed_in_with(approver: Approver, link: str) -> int:
    status, html = Browser(approver).get(link)
    assert "signed in as" in html, html
    return status
