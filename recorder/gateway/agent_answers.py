"""What the Recorder's own answers to an agent say, in ``content`` and in their declared shape.

Some hosts hand the model only a result's ``content``; so every answer of an agent tool, and every
held call, says its essentials in a sentence (step numbers, what to do next) followed by the
structured result as JSON. Each agent tool declares the shape of its ``structuredContent``
(``outputSchema``, checked by clients) and its hints (``annotations``).
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp.types import ToolAnnotations


def said(sentence: str, structured: dict[str, Any]) -> str:
    """An answer's ``content`` text: the sentence, then the structured result as JSON."""
    return f"{sentence}\n{json.dumps(structured, ensure_ascii=False, sort_keys=True)}"


def _obj(required: list[str], **properties: Any) -> dict[str, Any]:
    """An object schema: these members (more may come), these required."""
    return {"type": "object", "properties": properties, "required": required}


_STR: Final = {"type": "string"}
_INT: Final = {"type": "integer"}
_STEPS: Final = {"type": "array", "items": _obj(["step"], step=_INT, reason=_STR)}
"""Steps a plan keeps, each with its reason."""

OUTPUT_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "checkpoint": _obj(["label", "afterStep", "entry"], label=_STR, afterStep=_INT, entry=_STR),
    "list_changes": _obj(
        ["run", "changes", "entry"],
        run=_STR,
        entry=_STR,
        changes={
            "type": "array",
            "items": _obj(
                ["step", "entry", "server", "tool", "summary", "undo"],
                step=_INT,
                entry=_STR,
                server=_STR,
                tool=_STR,
                summary=_STR,
                undo={
                    "enum": ["reversed", "requested", "expired", "reversible", "not-reversible", "unknown"]
                },
                undoBy=_STR,
                plan=_STR,
                reason=_STR,
            ),
        },
    ),
    "explain": _obj(
        ["server", "tool", "action", "class", "meaning", "undo", "text", "entry"],
        server=_STR,
        tool=_STR,
        action={"enum": ["allow", "ask"]},
        meaning=_STR,
        undo=_STR,
        text=_STR,
        entry=_STR,
        **{"class": {"enum": ["R0", "R1", "R2", "R3", "R4"]}},
    ),
    "request_undo": _obj(
        ["status", "plan", "request", "approver", "decideBy", "steps", "entry"],
        status={"const": "pending_approval"},
        plan=_STR,
        request=_STR,
        approver=_STR,
        decideBy=_STR,
        steps={"type": "array", "items": _obj(["step", "undo"], step=_INT, undo=_STR)},
        conflicts=_STEPS,
        notReversible=_STEPS,
        blocked=_STEPS,
        expired=_STEPS,
        unresolved=_STEPS,
        alreadyReversed=_STEPS,
        changedNothing=_STEPS,
        message=_STR,
        entry=_STR,
    ),
}
"""The ``structuredContent`` of each agent tool's answer (a refusal, ``isError``, is not checked)."""

ANNOTATIONS: Final = {
    # Each call is journaled as a note, but nothing changes in a tool server.
    "checkpoint": ToolAnnotations(
        title="Mark a point of this run", readOnlyHint=False, destructiveHint=False, openWorldHint=False
    ),
    "list_changes": ToolAnnotations(
        title="List this run's changes", readOnlyHint=True, idempotentHint=True, openWorldHint=False
    ),
    "explain": ToolAnnotations(
        title="Explain how a call would be decided",
        readOnlyHint=True,
        idempotentHint=True,
        openWorldHint=False,
    ),
    # A plan for a person to decide: nothing is undone by this call.
    "request_undo": ToolAnnotations(
        title="Ask a person to undo this run's changes",
        readOnlyHint=False,
        destructiveHint=False,
        idempotentHint=False,
        openWorldHint=False,
    ),
}
