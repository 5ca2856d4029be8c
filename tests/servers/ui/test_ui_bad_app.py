"""An app that misbehaves: ``hatp-ui`` (over stdio) answers with a stable code and journals no
token for an action that did not happen, and journals ``unknown`` (never nothing) for one that may
have happened but could not be read back.

The misbehaving app is a small real HTTP server whose answers a test switches.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from ui_client import UiTools, start_ui

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.toolkit.wire import META_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

LIST_PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Invoices</title></head>
<body><main><h1>Invoices</h1>
<table aria-label="Invoices"><thead><tr><th scope="col">Invoice</th><th scope="col">Customer</th>
<th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
<tbody></tbody></table>
<section aria-label="New invoice"><form method="post" action="/invoices">
<label for="customer">Customer</label><input id="customer" name="customer" required>
<label for="amount">Amount</label><input id="amount" name="amount" required>
<button type="submit">Create invoice</button></form></section></main></body></html>"""


class Misbehaving(BaseHTTPRequestHandler):
    """Answers as ``mode`` says: ``list`` (a list page whose create answer says nothing),
    ``500`` (every page fails), or ``blank`` (a page without the Invoices table)."""

    mode: ClassVar[str] = "list"
    posts: ClassVar[int] = 0

    def do_GET(self) -> None:
        if self.mode == "500":
            self._answer(500, b"<p>Internal error</p>")
        elif self.mode == "blank":
            self._answer(200, b"<!doctype html><title>Maintenance</title><p>Back soon.</p>")
        else:
            self._answer(200, LIST_PAGE)

    def do_POST(self) -> None:
        type(self).posts += 1
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(303)
        self.send_header("location", "/")  # no status line: what happened can't be read back
        self.end_headers()

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


class MisbehavingApp:
    """Serves :class:`Misbehaving` on one port, and can stop listening there (connections refused)."""

    def __init__(self) -> None:
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Misbehaving)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
        self._server = self._thread = None


@pytest.fixture(scope="module")
def bad_app() -> Iterator[MisbehavingApp]:
    app = MisbehavingApp()
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
async def ui_on_bad_app(
    bad_app: MisbehavingApp, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[UiTools]:
    # The app can't say its Trash window, so the window is given; short waits keep the test quick.
    extra = ("--retention-days", "30", "--page-timeout-ms", "1000")
    async for tools in start_ui(tmp_path_factory.mktemp("ui-bad"), bad_app.url, *extra):
        yield tools


@pytest.fixture
def mode() -> Iterator[type[Misbehaving]]:
    Misbehaving.mode, Misbehaving.posts = "list", 0
    yield Misbehaving
    Misbehaving.mode = "list"


async def test_a_page_that_does_not_load_is_tool_failed_with_no_token_and_nothing_sent(
    mode, ui_on_bad_app
) -> None:
    mode.mode = "500"

    reply = await ui_on_bad_app.call("create_invoice", customer="Hooli", amount="5")
    read = await ui_on_bad_app.call("get_invoice", invoice_id="INV-0001")

    assert (reply.error, reply.code, reply.data["data"]["problem"]) == (True, "TOOL_FAILED", "page_failed")
    assert read.code == "TOOL_FAILED"
    assert "compensationToken" not in reply.journal
    assert mode.posts == 0


async def test_a_page_that_is_not_the_app_is_tool_failed_with_no_token(mode, ui_on_bad_app) -> None:
    mode.mode = "blank"

    reply = await ui_on_bad_app.call("delete_invoice", invoice_id="INV-0001")

    assert (reply.code, reply.data["data"]["problem"]) == ("TOOL_FAILED", "page_unexpected")
    assert "compensationToken" not in reply.journal


async def test_an_action_sent_whose_result_cannot_be_read_is_journaled_unknown_not_dropped(
    mode, ui_on_bad_app
) -> None:
    reply = await ui_on_bad_app.call("create_invoice", customer="Hooli", amount="5")

    assert not reply.error
    assert mode.posts == 1
    assert reply.journal["undo"]["kind"] == "unknown"
    assert "compensationToken" not in reply.journal
    assert reply.journal["effect"]["summary"].startswith("Sent a new invoice to the app, but what it did")
    assert reply.data["outcome"] == "unknown"


async def test_an_app_that_is_not_reachable_is_tool_failed_with_no_token(bad_app, ui_on_bad_app) -> None:
    bad_app.stop()
    try:
        reply = await ui_on_bad_app.call("edit_invoice", invoice_id="INV-0001", amount="5")
        read = await ui_on_bad_app.call("list_invoices")
    finally:
        bad_app.start()

    assert (reply.error, reply.code, reply.data["data"]["problem"]) == (
        True,
        "TOOL_FAILED",
        "app_unreachable",
    )
    assert read.code == "TOOL_FAILED"
    assert "compensationToken" not in reply.journal


async def test_an_outside_edit_on_an_app_without_test_controls_is_refused_with_no_test_controls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATP_JOURNAL_TESTING", "1")
    touch = {"tool": "edit_invoice", "resource": "ui://invoices/INV-0001"}
    with FakeApp(tmp_path / "prod.db", test_controls=False) as app:
        before = app.invoice("INV-0001")
        async for ui in start_ui(tmp_path, app.url):
            result = await ui.client.call_tool_mcp("hatp_testing_touch", touch)

        error = (result.meta or {})[META_KEY]["error"]
        assert result.is_error
        assert (error["code"], error["data"]["cause"]) == ("TOOL_FAILED", "NO_TEST_CONTROLS")
        assert app.invoice("INV-0001") == before
