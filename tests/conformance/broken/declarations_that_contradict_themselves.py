"""The CRM plus hand-written tools whose declarations (or hints) are wrong, one mistake each:
the tool's name says which. None of them offers a sample, so only J-2.1 and J-2.2 test them."""

from typing import Any

import _crm
from fastmcp import FastMCP
from mcp.types import ToolAnnotations

from hatp_journal.toolkit.wire import META_KEY

CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False)
"""The hints an undoable change should carry."""
IRREVERSIBLE = ToolAnnotations(read_only_hint=False, destructive_hint=True)

TOOLS: dict[str, tuple[dict[str, Any], ToolAnnotations | None]] = {
    "garbled": ({"undo": {"kind": "maybe"}}, None),
    "vague": ({}, None),
    "read_and_undo": ({"read": True, "undo": {"kind": "compensate", "window": "P1D"}}, CHANGES),
    "windowless": ({"undo": {"kind": "compensate"}}, CHANGES),
    "window_soon": ({"undo": {"kind": "compensate", "window": "soon"}}, CHANGES),
    "window_zero": ({"undo": {"kind": "compensate", "window": "PT0S"}}, CHANGES),
    "windows_apart": ({"undo": {"kind": "compensate", "window": "P1D", "windowSeconds": 60}}, CHANGES),
    "reasonless": ({"undo": {"kind": "none"}}, IRREVERSIBLE),
    "undoable_but_destructive": ({"undo": {"kind": "compensate", "window": "P1D"}}, None),
    "closed_world_disclosure": (
        {"read": True, "undo": {"kind": "none"}, "reason": "discloses data outside the organisation"},
        ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
    ),
}


def add_tools(mcp: FastMCP) -> None:
    for name, (declaration, hints) in TOOLS.items():

        def tool(value: str) -> str:
            """Declared wrong (see the tool's name)."""
            return value

        meta = {META_KEY: {"protocol": "hatp-journal/0.3", **declaration}}
        mcp.tool(tool, name=name, annotations=hints, meta=meta)


VARIANT = _crm.Variant(more=add_tools)

if __name__ == "__main__":
    VARIANT.serve()
