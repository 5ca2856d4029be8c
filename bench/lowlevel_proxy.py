"""The thinnest MCP proxy the mcp library allows: ``mcp.server.lowlevel.Server`` over stdio.

``lowlevel_proxy.py COMMAND [ARG ...]`` starts ``COMMAND`` as a stdio MCP server, keeps one
``ClientSession`` to it open, and answers ``tools/list`` and ``tools/call`` on its own stdin/stdout
by forwarding them unchanged: no FastMCP, no validation of its own, no journaling. ``mcp_hop.py``
measures what this hop costs, the floor under any Python gateway built on the mcp library.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def serve(command: str, args: list[str]) -> None:
    """Connect to the server once and forward its tools over stdio until stdin closes."""
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as backend:
        await backend.initialize()

        async def on_list_tools(
            context: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return await backend.list_tools()

        async def on_call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await backend.call_tool(params.name, params.arguments or {})

        server: Server[Any] = Server("lowlevel-proxy", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        async with stdio_server() as (server_read, server_write):
            await server.run(server_read, server_write, server.create_initialization_options())


def main() -> None:
    """Proxy the server command given on the command line."""
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    anyio.run(serve, sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    main()
