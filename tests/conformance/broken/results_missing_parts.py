"""The CRM, except that update_deal's results lack or garble the one part ``--part NAME`` picks
(``python results_missing_parts.py --db crm.db --part token``); see ``PARTS`` and ``REPLIES``.
Changed journal objects are re-signed, so only the part itself is wrong."""

import argparse
from collections.abc import Callable, Mapping
from typing import Any

import _crm
from fastmcp.tools import ToolResult

from hatp_journal.toolkit import Journal
from hatp_journal.toolkit import _server as toolkit_server
from hatp_journal.toolkit.wire import META_KEY, EffectInfo, JournalObject, UndoInfo

TOOL = "update_deal"


def _undo(journal: JournalObject, **update: Any) -> JournalObject:
    undo = journal.undo or UndoInfo(kind="compensate")
    return journal.model_copy(update={"undo": undo.model_copy(update=update)})


def _effect(journal: JournalObject, **update: Any) -> JournalObject:
    effect = journal.effect or EffectInfo(summary="", resource="")
    return journal.model_copy(update={"effect": effect.model_copy(update=update)})


def _made_up(journal: JournalObject) -> JournalObject:
    fields = (journal.effect.fields if journal.effect else None) or {}
    return _effect(journal, fields={name: "made-up" for name in fields})


PARTS: dict[str, Callable[[JournalObject], JournalObject]] = {
    "token": lambda journal: journal.model_copy(update={"compensation_token": None}),
    "version": lambda journal: _effect(journal, version=None),
    "effect": lambda journal: journal.model_copy(update={"effect": None}),
    "fields": _made_up,
    "undo": lambda journal: journal.model_copy(update={"undo": None}),
    "undo_by": lambda journal: _undo(journal, undo_by=None),
    "undo_by_not_utc": lambda journal: _undo(journal, undo_by="next Tuesday"),
}
"""Parts of the journal object, each changed and the object re-signed."""

REPLIES: dict[str, Callable[[ToolResult], ToolResult]] = {
    "journal": lambda result: ToolResult(content=result.content),
    "garbled": lambda result: ToolResult(content=result.content, meta={META_KEY: {"server": ["crm"]}}),
    "error": lambda result: ToolResult(content="it broke", is_error=True),
}
"""Whole replies, changed as the agent's client receives them."""


def lack(journal: Journal) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", required=True, choices=[*PARTS, *REPLIES])
    part = parser.parse_known_args(_crm.arguments())[0].part
    if part in PARTS:
        change = PARTS[part]
        _crm.change_results({TOOL: lambda body, sign: sign(change(body))})(journal)
        return
    invoke = toolkit_server._invoke

    def replied(journal: Journal, tool: str, arguments: Mapping[str, Any], *bound: Any) -> ToolResult:
        result = invoke(journal, tool, arguments, *bound)
        return REPLIES[part](result) if tool == TOOL else result

    toolkit_server._invoke = replied  # type: ignore[attr-defined]


VARIANT = _crm.Variant(lack)

if __name__ == "__main__":
    VARIANT.serve()
