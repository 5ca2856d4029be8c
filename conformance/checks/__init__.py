"""The checks, one module per area of docs/protocol.md; each registers itself under a requirement id."""
