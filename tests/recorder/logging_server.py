"""A plain FastMCP server (stdio, the 2026 protocol era) whose tools log (and report progress) before
they answer."""

from fastmcp import Context, FastMCP

mcp = FastMCP("logging")


@mcp.tool
async def tell(ctx: Context) -> str:
    """Log one line at info, then answer."""
    await ctx.info("counting the shelves")
    return "told"


@mcp.tool
async def count(ctx: Context) -> str:
    """Report progress, log at debug and warning, then answer."""
    await ctx.report_progress(1, 2, "half the shelves")
    await ctx.debug("shelf 1 has 3 boxes")
    await ctx.warning("shelf 3 is empty")
    return "counted"


if __name__ == "__main__":
    mcp.run(show_banner=False)
