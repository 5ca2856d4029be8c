"""The host registry files shipped with the Recorder: one JSON file per MCP server, each tool
classified R0–R4 with a rationale and the evidence it was checked against (docs/policy.md)."""
