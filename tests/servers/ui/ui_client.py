"""``hatp-ui serve`` over stdio behind a real MCP client, and the calls the UI tests make."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.servers.fakeapp.pytest_ui import require_chromium
from hatp_journal.toolkit.wire import META_KEY

CLI = ["-m", "hatp_journal.servers.ui"]


@dataclass
class Reply:
    """One tool result: whether it is an error, its ``hatp/journal`` meta and its structured content."""

    error: bool
    journal: dict[str, Any]
    data: dict[str, Any]

    @property
    def code(self) -> str | None:
        """The stable error code, wherever the result carries it."""
        return self.journal.get("code") or self.journal.get("error", {}).get("code")


class UiTools:
    """``hatp-ui`` behind a real MCP client, with the calls these tests make."""

    def __init__(self, client: Client[Any], folder: Path) -> None:
        self.client, self.folder = client, folder

    async def call(self, tool: str, **arguments: Any) -> Reply:
        result = await self.client.call_tool_mcp(tool, arguments)
        meta = (result.meta or {}).get(META_KEY, {})
        return Reply(bool(result.is_error), meta, result.structured_content or {})

    async def act(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """Call an acting tool that must succeed; its journal object."""
        reply = await self.call(tool, **arguments)
        assert not reply.error, reply.data
        return reply.journal

    async def undo(self, journal: dict[str, Any], **extra: Any) -> Reply:
        extra.setdefault("ifVersion", journal["effect"]["version"])
        return await self.call("hatp_journal_compensate", token=journal["compensationToken"], **extra)

    async def check(self, journal: dict[str, Any]) -> Reply:
        return await self.call("hatp_journal_check", token=journal["compensationToken"])

    async def invoice(self, invoice_id: str) -> dict[str, Any]:
        """A fresh read through the UI (the read tool), not the app's own store."""
        reply = await self.call("get_invoice", invoice_id=invoice_id)
        assert not reply.error, reply.data
        return reply.data

    async def declarations(self) -> dict[str, dict[str, Any]]:
        return {tool.name: (tool.meta or {}).get(META_KEY, {}) for tool in await self.client.list_tools()}


def serve_arguments(folder: Path, app_url: str, *extra: str) -> list[str]:
    """``hatp-ui serve`` arguments with the store, key and evidence in ``folder``."""
    db = folder / "ui.db"
    return [*CLI, "serve", "--app-url", app_url, "--db", str(db), "--key", str(folder / "ui.key"), *extra]


async def start_ui(folder: Path, app_url: str, *extra: str) -> AsyncIterator[UiTools]:
    """Run ``hatp-ui serve`` over stdio and yield it behind a client."""
    require_chromium()
    transport = StdioTransport(
        sys.executable, serve_arguments(folder, app_url, *extra), env=dict(os.environ), cwd=str(folder)
    )
    async with Client(transport, timeout=60) as client:
        yield UiTools(client, folder)
