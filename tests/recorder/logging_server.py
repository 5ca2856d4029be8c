"""A plain FastMCP server (stdio, the 2026 protocol era) whose one tool logs before it answers."""

from fastmcp import Context, FastMCP

mcp = FastMCP("logging")


@mcp.tool
async def tell(ctx: Context) -> str:
    """Log one line at info, then answer."""
    await ctx.info("counting the shelves")
    return "told"


if __name__ == "__main__":
    mcp.run(show_banner=False)
