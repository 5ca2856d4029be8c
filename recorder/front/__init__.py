"""The agent's side: the stdio and HTTP fronts, and the hot-path lines read and written without the
MCP library."""
