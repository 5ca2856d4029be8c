"""A run's own chain through a user interface: the agent creates an invoice and deletes it again
through ``hatp-ui`` (the fake app in headless chromium, behind the Recorder). Undoing
from step 1 plans no conflict of the run's own making (the create's check finds the invoice gone:
the run's own delete moved it to Trash) and leaves the invoice where the run found it: not there.

``hatp-ui`` is served from the test's own process over streamable HTTP, so the agent, ``plan`` and
``approve`` reach one server and one chromium instead of each starting a process and a browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.undo_org import make_org

from hatp_journal.recorder.web.server import serving
from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.servers.fakeapp.pytest_ui import fake_app, fake_app_server, require_chromium
from hatp_journal.servers.ui.server import UiSettings, build
from hatp_journal.toolkit import SigningKey

__all__ = ["fake_app", "fake_app_server"]

pytestmark = pytest.mark.browser


@contextmanager
def ui_server(app_url: str, folder: Path) -> Iterator[str]:
    """``hatp-ui`` for the app at ``app_url``, served from this process until the block ends; its MCP URL."""
    ui = build(UiSettings(app_url, folder / "ui.db", SigningKey.load_or_create(folder / "ui.key")))
    try:
        with serving(ui.mcp.http_app(), scheduler=True) as url:  # sessions run in the lifespan
            yield f"{url}/mcp"
    finally:
        ui.browser.close()
        ui.journal.engine.dispose()


def test_a_created_then_deleted_invoice_undone_from_step_1_is_not_restored_and_nothing_conflicts(
    fake_app: FakeApp, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    require_chromium()
    org = make_org(tmp_path, capfd)
    policy = json.loads((tmp_path / "policy.json").read_text())
    policy["autonomy"]["via"] = {"ui": "allow"}  # this organisation lets UI-replayed undo through
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    with ui_server(fake_app.url, tmp_path) as url:
        with org.config.open("a") as config:
            config.write(f"\n[servers.ui]\nurl = {json.dumps(url)}\n")
            config.write("timeout_seconds = 120\n")  # a browser on a busy machine
        run = org.agent(
            [
                ("ui_create_invoice", {"customer": "Hooli", "amount": "321.5"}),
                ("ui_delete_invoice", {"invoice_id": "INV-0004"}),
            ]
        )
        assert fake_app.invoice("INV-0004").in_trash

        ref, plan = org.plan(run, "--from", "1")
        code, _, err = org.approve(ref)

    assert plan["conflicts"] == []
    assert [(s["entry"], s.get("after")) for s in plan["steps"]] == [("e2", None), ("e1", "e2")]
    assert code == 0, err
    assert org.reversal(run) == {"e2": "reversed", "e1": "reversed"}
    assert [invoice.id for invoice in fake_app.invoices()] == ["INV-0001", "INV-0002", "INV-0003"]
    assert [invoice.id for invoice in fake_app.trash()] == ["INV-0004"]  # back where the run left it
