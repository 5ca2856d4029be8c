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

DOC = Path(__file__).parents[3] / "docs" / "ui-undo.md"


def example(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"docs/ui-undo.md has no example named {name}"
    return match.group(1)


EXAMPLE: dict[str, Any] = {"__name__": "ui_undo_example"}
exec(compile(example("ui-test"), "docs/ui-undo.md", "exec"), EXAMPLE)
DOCUMENTED_TESTS = sorted(name for name in EXAMPLE if name.startswith("test_"))


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
