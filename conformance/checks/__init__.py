"""The checks, one module per SPEC area; each registers itself under a requirement id."""
