"""Fixtures: the email server behind a real MCP client, sending to a real SMTP mail sink."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from hatp_journal.servers.email import MailSettings, build
from hatp_journal.servers.mailsink import MailSink
from hatp_journal.servers.mailsink.pytest_fixtures import mail_sink
from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit.testing import FakeClock
from hatp_journal.toolkit.wire import META_KEY

__all__ = ["closed_port", "mail", "mail_sink", "serve_mail", "stdio_mail", "unreachable_mail"]


@dataclass
class Reply:
    """One tool result: whether it is an error, its ``hatp/journal`` meta and its structured content."""

    error: bool
    journal: dict[str, Any]
    data: dict[str, Any]


class Mail:
    """An email server behind a real MCP client, with the calls these tests make."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client

    async def call(self, tool: str, **arguments: Any) -> Reply:
        result = await self.client.call_tool_mcp(tool, arguments)
        meta = (result.meta or {}).get(META_KEY, {})
        return Reply(bool(result.is_error), meta, result.structured_content or {})

    async def compensate(self, journal: dict[str, Any]) -> Reply:
        token, version = journal["compensationToken"], journal["effect"]["version"]
        return await self.call("hatp_journal_compensate", token=token, ifVersion=version)

    async def sent(self) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = (await self.call("list_sent")).data["sent"]
        return sent

    async def drafts(self) -> list[dict[str, Any]]:
        drafts: list[dict[str, Any]] = (await self.call("list_drafts")).data["drafts"]
        return drafts

    async def declarations(self) -> dict[str, dict[str, Any]]:
        return {tool.name: (tool.meta or {}).get(META_KEY, {}) for tool in await self.client.list_tools()}


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, read, and closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def serve_mail(tmp_path: Path) -> Callable[[int], AbstractAsyncContextManager[Mail]]:
    """Start the email server in memory, delivering to the SMTP server on a given loopback port."""

    @asynccontextmanager
    async def serve(port: int) -> AsyncIterator[Mail]:
        smtp = MailSettings(port=port)
        mcp, _ = build(tmp_path / "email.db", SigningKey.generate(), FakeClock(), smtp=smtp)
        async with Client(mcp) as client:
            yield Mail(client)

    return serve


@pytest.fixture
async def mail(
    serve_mail: Callable[[int], AbstractAsyncContextManager[Mail]], mail_sink: MailSink
) -> AsyncIterator[Mail]:
    """The email server in memory, delivering to the mail sink."""
    async with serve_mail(mail_sink.port) as served:
        yield served


@pytest.fixture
async def unreachable_mail(
    serve_mail: Callable[[int], AbstractAsyncContextManager[Mail]], closed_port: int
) -> AsyncIterator[Mail]:
    """The email server in memory, pointed at a port where no SMTP server listens."""
    async with serve_mail(closed_port) as served:
        yield served


@pytest.fixture
async def stdio_mail(tmp_path: Path, mail_sink: MailSink) -> AsyncIterator[Mail]:
    """``hatp-email serve`` over stdio, delivering to the mail sink."""
    arguments = ["-m", "hatp_journal.servers.email.cli", "serve", "--db", str(tmp_path / "email.db")]
    arguments += ["--smtp-host", mail_sink.host, "--smtp-port", str(mail_sink.port)]
    transport = StdioTransport(sys.executable, arguments, env=dict(os.environ), cwd=str(tmp_path))
    async with Client(transport) as client:
        yield Mail(client)
