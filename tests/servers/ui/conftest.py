"""Fixtures: the fake app and a browser from the toolkit's UI kit, and ``hatp-ui serve`` over stdio.

One ``hatp-ui`` process (and its chromium) serves a whole test module: starting Python, FastMCP and
chromium costs seconds, and the fake app is reset to its seeded state before every test anyway.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from ui_client import UiTools, start_ui

from hatp_journal.servers.fakeapp.pytest_ui import browser_page, chromium, fake_app, fake_app_server

__all__ = ["browser_page", "chromium", "fake_app", "fake_app_server"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope, so one ``hatp-ui`` process can serve every test of a module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def ui(fake_app_server: Any, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[UiTools]:
    """``hatp-ui serve`` over stdio against the session's fake app (reset by ``fake_app`` per test)."""
    async for tools in start_ui(tmp_path_factory.mktemp("ui"), fake_app_server.url):
        yield tools
