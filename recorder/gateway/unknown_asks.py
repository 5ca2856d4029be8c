"""A read of a URI nothing serves, or a get of a prompt no server offers: the agent asked for
something the Recorder can't forward to anyone. Like a call of a tool it does not publish, each is
journaled as a ``refused`` entry (no ``server``: none was asked) and answered with its own code
(docs/policy.md, "Prompts and resources")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from hatp_journal.recorder.gateway.arguments import check_arguments
from hatp_journal.recorder.gateway.prompt_policy import PROMPT_TOOL, Asked
from hatp_journal.recorder.record.written_bodies import RefusedRecord

if TYPE_CHECKING:
    from hatp_journal.recorder.gateway.core import Recorder

UNKNOWN_RESOURCE: Final = "UNKNOWN_RESOURCE"
UNKNOWN_PROMPT: Final = "UNKNOWN_PROMPT"

QUOTED_CHARACTERS: Final = 200
"""Longest name or URI quoted in the agent's error message; the rest is said as a count (the whole
of it is in the entry, unless it is too large for the record)."""


async def refuse_unknown(recorder: Recorder, asked: Asked) -> MCPError:
    """Journal ``asked``, which nothing the Recorder publishes serves, as refused; the agent's error
    (``-32602``, ``data``: the code, the entry, and the name or URI when the entry keeps it)."""
    section = recorder.config.recorder
    checked = check_arguments(asked.arguments, section.max_arguments_bytes)
    kept = (
        {"arguments": asked.arguments, "argumentsDigest": checked.digest}
        if checked.refusal is None
        else checked.refusal.kept
    )
    prompt = asked.method == PROMPT_TOOL
    code = UNKNOWN_PROMPT if prompt else UNKNOWN_RESOURCE
    body = RefusedRecord.model_validate(
        {"agent": section.agent, "principal": section.principal, "tool": asked.method, "code": code, **kept}
    )
    entry = await recorder.store.append_async(recorder.own_run(), "refused", body.wire())
    named = quoted(asked.name)
    said = (
        f"{code}: no server of the Recorder offers a prompt named {named}"
        " (its prompts are named SERVER_PROMPT here: see prompts/list)"
        if prompt
        else f"{code}: no server of the Recorder lists {named} or a template matching it"
    )
    data = {"code": code, "entry": entry.id}
    if checked.refusal is None:
        data["name" if prompt else "uri"] = asked.name
    return MCPError(INVALID_PARAMS, said, data)


def quoted(name: str) -> str:
    """``name`` as an error message quotes it: ``repr`` escapes every character that is not printable
    (one line, no terminal controls), and a long one is cut."""
    if len(name) <= QUOTED_CHARACTERS:
        return repr(name)
    return f"{name[:QUOTED_CHARACTERS]!r}… ({len(name)} characters)"
