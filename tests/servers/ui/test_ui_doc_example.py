"""docs/ui-undo.md's example is code: its tests run here as printed, with the fixtures its
conftest line turns on."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from hatp_journal.servers.fakeapp import FakeApp
from hatp_journal.toolkit.ui import RecordReadError, read_record

DOC = Path(__file__).parents[3] / "docs" / "ui-undo.md"


def example(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"docs/ui-undo.md has no example named {name}"
    return match.group(1)


EXAMPLE: dict[str, Any] = {"__name__": "ui_undo_example"}
exec(compile(example("ui-test"), "docs/ui-undo.md", "exec"), EXAMPLE)
DOCUMENTED_TESTS = sorted(name for name in EXAMPLE if name.startswith("test_"))


HARNESS_EXAMPLE: dict[str, Any] = {"__name__": "ui_harness_example"}
exec(compile(example("ui-harness"), "docs/ui-undo.md", "exec"), HARNESS_EXAMPLE)
HARNESS_TESTS = sorted(name for name in HARNESS_EXAMPLE if name.startswith("test_"))


def test_the_documented_conftest_line_turns_on_a_plugin_with_the_fixtures_the_example_takes() -> None:
    conftest: dict[str, Any] = {}
    exec(compile(example("ui-conftest"), "docs/ui-undo.md", "exec"), conftest)
    [plugin] = conftest["pytest_plugins"]
    module = importlib.import_module(plugin)

    assert len(DOCUMENTED_TESTS) == 3
    for name in DOCUMENTED_TESTS:
        for fixture in inspect.signature(EXAMPLE[name]).parameters:
            assert hasattr(module, fixture), f"{name} takes {fixture}, which the plugin does not offer"


@pytest.mark.browser
@pytest.mark.parametrize("name", DOCUMENTED_TESTS)
def test_the_documented_fingerprint_test_passes_as_printed(
    name: str, fake_app: FakeApp, browser_page: Page
) -> None:
    EXAMPLE[name](fake_app=fake_app, browser_page=browser_page)


@pytest.mark.browser
@pytest.mark.parametrize("name", HARNESS_TESTS)
def test_the_documented_ui_tool_under_the_harness_passes_as_printed(
    name: str, fake_app: FakeApp, browser_page: Page, tmp_path: Path
) -> None:
    HARNESS_EXAMPLE[name](fake_app=fake_app, browser_page=browser_page, tmp_path=tmp_path)


@pytest.mark.browser
def test_a_table_that_is_not_on_the_page_is_a_read_error_not_a_timeout(
    fake_app: FakeApp, browser_page: Page
) -> None:
    browser_page.goto(fake_app.url)
    browser_page.set_default_timeout(300)  # the table never comes: no need to wait the full bound

    with pytest.raises(RecordReadError):
        read_record(browser_page.get_by_role("table", name="Payments"), "INV-0001")
