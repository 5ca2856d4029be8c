"""Two approvers on one database, as two ``hatp-recorder web`` processes behind one address.

With the Recorder's store on a database URL, sessions, forms and used sign-in links are kept in
that database: a sign-in on one approver is honoured by the other, a link used on one is refused
by the other, a form one rendered is accepted once by the other. Each approver is a real HTTP
server on its own port (a browser's cookie for 127.0.0.1 goes to both, as behind a load balancer).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from http_browser import Browser, code, decisions, form_fields, signed_in
from support.undo_org import DANA, LEE, make_org
from web_org import WAIT_SECONDS, Approver, Clock

from hatp_journal.recorder.config import load_config
from hatp_journal.recorder.web.app import WebApprover
from hatp_journal.recorder.web.server import serving


@pytest.fixture(params=["postgresql", "sqlite-url"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The Recorder's store on a database URL: PostgreSQL, then SQLite named by a URL."""
    if request.param == "sqlite-url":
        return f"sqlite:///{tmp_path / 'recorder.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@contextmanager
def two_approvers(tmp_path: Path, capfd: pytest.CaptureFixture[str], store: str) -> Iterator[list[Approver]]:
    org = make_org(tmp_path / "org", capfd, store=store)
    with org.config.open("a") as config:
        config.write('\n[web]\nkeys = "."\n')
    clock = Clock()
    with ExitStack() as stack:
        approvers = []
        for _ in range(2):
            config = load_config(org.config)  # each its own, as each process reads the file
            web = WebApprover(config, clock=clock)
            stack.callback(web.close)
            url = stack.enter_context(serving(web.app))
            config.web.base_url = url
            approvers.append(Approver(org, web, url, clock))
        yield approvers


@pytest.fixture
def approvers(tmp_path: Path, capfd: pytest.CaptureFixture[str], database: str) -> Iterator[list[Approver]]:
    with two_approvers(tmp_path, capfd, database) as served:
        yield served


def token_of(link: str) -> str:
    return link.partition("token=")[2]


def test_a_sign_in_on_one_approver_is_honoured_by_the_other(approvers: list[Approver]) -> None:
    first, second = approvers
    browser = signed_in(first)
    browser.approver = second

    status, html = browser.get("/asks")

    assert status == 200, code(html)
    assert "signed in as" in html


def test_a_sign_in_link_used_on_one_approver_is_refused_on_the_other(approvers: list[Approver]) -> None:
    first, second = approvers
    token = token_of(first.web.link(LEE))
    assert Browser(first).get(f"/signin?token={token}")[0] == 200

    status, html = Browser(second).get(f"/signin?token={token}")

    assert (status, code(html)) == (401, "SIGNIN_USED")


def test_one_link_opened_on_both_approvers_at_once_signs_in_once(approvers: list[Approver]) -> None:
    token = token_of(approvers[0].web.link(LEE))
    start = threading.Barrier(len(approvers))

    def open_link(approver: Approver) -> tuple[int, str]:
        start.wait(WAIT_SECONDS)
        status, html = Browser(approver).get(f"/signin?token={token}")
        return status, code(html)

    with ThreadPoolExecutor(max_workers=len(approvers)) as pool:
        answers = sorted(pool.map(open_link, approvers))

    assert [status for status, _ in answers] == [200, 401]
    assert answers[1][1] == "SIGNIN_USED"


def test_a_form_rendered_by_one_approver_counts_once_on_the_other(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    # PostgreSQL only: an agent's run and a plan cost seconds, and the forms' table is the same on SQLite.
    with two_approvers(tmp_path, capfd, postgres_url) as (first, second):
        run = first.org.agent([("chain_put", {"key": "a", "value": "1"})])
        ref, _ = first.org.plan(run, "--from", "1", by=DANA)
        browser = signed_in(first)
        fields = {**form_fields(browser.get(f"/plans/{ref}")[1]), "decision": "deny"}

        browser.approver = second
        counted = browser.post(f"/plans/{ref}", fields)
        browser.approver = first
        status, html = browser.post(f"/plans/{ref}", fields)

        assert code(counted[1]) == "COUNTED"
        assert (status, code(html)) == (409, "FORM_USED")
        assert decisions(first, run) == [True]


def test_a_sign_in_expires_on_every_approver(approvers: list[Approver]) -> None:
    first, second = approvers
    browser = signed_in(first)
    first.clock.ahead += first.web.signin.session_length

    browser.approver = second
    status, html = browser.get("/asks")

    assert (status, code(html)) == (401, "SIGNIN_REQUIRED")


def test_on_a_store_file_path_each_approver_keeps_its_own_sessions(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with two_approvers(tmp_path, capfd, "recorder.db") as (first, second):
        browser = signed_in(first)
        browser.approver = second

        status, html = browser.get("/asks")

        assert (status, code(html)) == (401, "SIGNIN_REQUIRED")
