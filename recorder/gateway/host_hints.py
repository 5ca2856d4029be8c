"""The MCP annotations the Recorder publishes to the agent: the host's decision, not the server's
claim (docs/policy.md, "What the agent sees").

``readOnlyHint`` is true only for a tool the host classes R0 for every call; ``destructiveHint`` is
true for R3 and R4, and for a tool whose class depends on its arguments (its worst case). The
server's ``title``, ``idempotentHint`` and ``openWorldHint`` are kept: they grant nothing.
"""

from __future__ import annotations

from mcp.types import ToolAnnotations

from hatp_journal.recorder.policy.classes import RClass

DESTRUCTIVE: frozenset[RClass] = frozenset({"R3", "R4"})


def host_annotations(listed: ToolAnnotations | None, rclass: RClass | None) -> ToolAnnotations:
    """``listed`` (the server's annotations) with the hints the host's class ``rclass`` gives;
    ``None``: the class depends on each call's arguments."""
    read_only = rclass == "R0"
    destructive = rclass is None or rclass in DESTRUCTIVE
    update = {"read_only_hint": read_only, "destructive_hint": destructive}
    if listed is None:
        return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive)
    return listed.model_copy(update=update)
