"""What a tool server the Recorder can't use raises: apart from
:mod:`hatp_journal.recorder.gateway.downstream` so that a command can catch it without importing the
MCP client first (``hatp-recorder serve`` starts its servers before it imports the client)."""

from __future__ import annotations

from enum import StrEnum


class DownstreamCode(StrEnum):
    """Stable codes for a downstream the Recorder can't use (also the CLI's first word on stderr)."""

    DOWNSTREAM_FAILED = "DOWNSTREAM_FAILED"
    KEY_CHANGED = "KEY_CHANGED"


class DownstreamError(RuntimeError):
    """The downstream server failed, hung or answered something unusable.

    ``code`` is ``KEY_CHANGED`` when it offers none of the keys pinned for it (or lost the race to
    pin another key first), ``DOWNSTREAM_FAILED`` for everything else.
    """

    def __init__(self, message: str, code: DownstreamCode = DownstreamCode.DOWNSTREAM_FAILED) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
