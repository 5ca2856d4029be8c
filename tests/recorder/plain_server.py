"""A plain FastMCP server that knows nothing of the journal."""

from fastmcp import FastMCP

mcp = FastMCP("plain")


@mcp.tool
def shout(text: str) -> str:
    """Upper-case some text."""
    return text.upper()


if __name__ == "__main__":
    mcp.run(show_banner=False)
