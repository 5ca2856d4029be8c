"""How a target server is addressed: a command that starts a stdio MCP server, or an HTTP URL.

For a command, the suite starts the server itself with ``HATP_JOURNAL_TESTING=1`` added to the
environment, so a toolkit-built server publishes its test-only surface. A server reached by URL
must have been started in testing mode already. A FastMCP server built in this process (``server``)
is spoken to over the MCP library's in-memory transport: a real MCP session without a process.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from hatp_journal._shared.testing_env import TESTING_ENV


class TargetError(ValueError):
    """The target can't be addressed or tested. ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Target:
    """A server under test: ``http://…`` or a command line, as given on the command line, or a
    FastMCP ``server`` in this process (``address`` then only names it in the result)."""

    address: str
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    server: FastMCP[Any] | None = None

    @property
    def is_url(self) -> bool:
        """Whether the server is reached over streamable HTTP."""
        return self.address.startswith(("http://", "https://"))

    def client(self, timeout: float) -> Client[Any]:
        """A real MCP client for the target (not yet connected)."""
        if self.server is not None:
            return Client(self.server, timeout=timeout)
        if self.is_url:
            return Client(StreamableHttpTransport(self.address), timeout=timeout)
        try:
            argv = shlex.split(self.address)
        except ValueError as error:
            raise TargetError("BAD_TARGET", f"cannot read the command {self.address!r}: {error}") from None
        if not argv:
            raise TargetError(
                "BAD_TARGET", "give a command that starts a stdio MCP server, or an http:// URL"
            )
        # A stdio child inherits almost nothing; pass the environment on, with testing mode on.
        env = {**os.environ, **self.env, TESTING_ENV: "1"}
        transport = StdioTransport(argv[0], argv[1:], env=env, cwd=self.cwd)
        return Client(transport, timeout=timeout)
