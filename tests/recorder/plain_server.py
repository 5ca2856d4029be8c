"""A plain FastMCP server that knows nothing of the journal, with two misbehaving tools."""

import os
import time

from fastmcp import FastMCP

mcp = FastMCP("plain")


@mcp.tool
def shout(text: str) -> str:
    """Upper-case some text."""
    return text.upper()


@mcp.tool
def hang(seconds: float) -> str:
    """Answer only after ``seconds`` (longer than the Recorder waits)."""
    time.sleep(seconds)
    return "late"


@mcp.tool
def crash() -> str:
    """Die without answering."""
    os._exit(3)


if __name__ == "__main__":
    mcp.run(show_banner=False)
