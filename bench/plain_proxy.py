"""A plain FastMCP proxy served over stdio: the benchmark's "MCP hop, no journaling" baseline.

``plain_proxy.py COMMAND [ARG ...]`` starts ``COMMAND`` as a stdio MCP server, keeps one session
to it open (as the Recorder keeps its downstream sessions), and serves ``create_proxy`` of that
session on its own stdin/stdout (or, with ``PLAIN_PROXY_HTTP_PORT=N``, over streamable HTTP on
127.0.0.1:N). It forwards every call unchanged and journals nothing.
"""

from __future__ import annotations

import logging
import os
import sys

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


async def serve(command: str, args: list[str]) -> None:
    """Connect to the server once and proxy it over stdio until stdin closes."""
    # create_proxy logs at INFO that it reuses the connected session: that is the point here.
    logging.getLogger("fastmcp.server.providers.proxy").setLevel(logging.WARNING)
    async with Client(StdioTransport(command, args, env=dict(os.environ))) as backend:
        proxy = create_proxy(backend, name="plain-proxy")
        if port := os.environ.get("PLAIN_PROXY_HTTP_PORT"):
            await proxy.run_async(transport="http", host="127.0.0.1", port=int(port), show_banner=False)
        else:
            await proxy.run_async(transport="stdio", show_banner=False)


def main() -> None:
    """Proxy the server command given on the command line."""
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    anyio.run(serve, sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    main()
