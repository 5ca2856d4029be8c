"""Effect previews for asks: what a held call would do, asked of its server before a person decides.

A journal-aware server may dry-run a tool (its declaration says ``preview: true``; the binding tool
``hatp_journal_preview``) and answer the effect object the real call would return: its summary,
resource and the fields it would change, before and after. When the policy holds such a call, the
Recorder asks for that preview once and keeps it in the ask entry (``preview``), so ``asks``,
``show`` and the web approver show it. The preview is the server's word, not a promise: the call
itself may differ, and its receipt says what it did. A preview that fails or does not fit is kept as
why (``{"failed": …}``); the ask is opened either way.
"""

from __future__ import annotations

from typing import Any

from mcp.types import TextContent
from pydantic import ValidationError

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.gateway.call_facts import declaration_of
from hatp_journal.recorder.gateway.downstream import Downstream, DownstreamError
from hatp_journal.recorder.intake.journal_objects import bounded
from hatp_journal.toolkit.wire import PREVIEW_TOOL, EffectInfo

PREVIEW_BYTES = 16_384
"""Largest preview kept in an ask (canonical bytes): a summary and a few fields, not a document."""


def offers_preview(downstream: Downstream, tool: str) -> bool:
    """Whether the server dry-runs ``tool``: it publishes the preview tool and declares one for it."""
    if not downstream.journal_aware or PREVIEW_TOOL not in downstream.tools:
        return False
    declaration = declaration_of(downstream, tool)
    return declaration is not None and declaration.preview


async def effect_preview(
    downstream: Downstream, tool: str, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """The ask's ``preview`` member: ``{"effect": …}``, ``{"failed": why}``, or None (none offered)."""
    if not offers_preview(downstream, tool):
        return None
    try:
        result = await downstream.call(PREVIEW_TOOL, {"tool": tool, "arguments": arguments})
    except DownstreamError as error:
        return {"failed": str(error)}
    if result.is_error:
        said = " ".join(part.text for part in result.content if isinstance(part, TextContent))
        return {"failed": f"the server refused the preview: {said[:300]}"}
    effect = result.structured_content
    problem = bounded(effect)
    if problem is not None:
        return {"failed": f"not kept: {problem}"}
    try:
        EffectInfo.model_validate(effect)
    except ValidationError:
        return {"failed": "not kept: the preview is not an effect object"}
    size = len(canonical_bytes(effect))
    if size > PREVIEW_BYTES:
        return {"failed": f"not kept: {size} bytes, more than {PREVIEW_BYTES}"}
    return {"effect": effect}
