"""``hatp-recorder``: its commands and entry points."""
