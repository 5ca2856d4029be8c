"""``hatp-recorder explain SERVER TOOL [--args JSON]``: a tool's reversibility class, the rule
and evidence behind it, and what the policy would decide, without calling the tool."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any

from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.downstream import Downstream
from hatp_journal.recorder.gateway import _declaration
from hatp_journal.recorder.policy import CallFacts, Decision, MoneyLedger, Policy, decide
from hatp_journal.toolkit.text import shown_lines


class ExplainError(ValueError):
    """No answer: ``code`` is ``UNKNOWN_SERVER``, ``UNKNOWN_TOOL`` or ``BAD_ARGUMENTS``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_arguments(text: str | None) -> dict[str, Any]:
    """``--args``: a JSON object (absent: no arguments)."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ExplainError("BAD_ARGUMENTS", f"--args is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ExplainError("BAD_ARGUMENTS", "--args must be a JSON object")
    return value


async def explain(
    config: RecorderConfig, policy: Policy, server: str, tool: str, arguments: dict[str, Any], at: datetime
) -> Decision:
    """Start ``server`` as the Recorder would, read its tool list and decide a call of ``tool``.

    Nothing is called but ``tools/list`` (and a journal-aware server's keys), nothing is pinned,
    and no money spent so far is counted: caps see an empty ledger.
    """
    settings = config.servers.get(server)
    if settings is None:
        known = ", ".join(sorted(config.servers))
        raise ExplainError("UNKNOWN_SERVER", f"no server {server!r} in the configuration (known: {known})")
    downstream = Downstream(server, settings)
    async with AsyncExitStack() as stack:
        await downstream.connect(stack)
    return decide_listed(downstream, policy, tool, arguments, at)


def decide_listed(
    downstream: Downstream, policy: Policy, tool: str, arguments: dict[str, Any], at: datetime
) -> Decision:
    """What the policy would decide for a call of ``tool`` of a connected ``downstream`` (nothing spent)."""
    server = downstream.name
    listed = downstream.tools.get(tool)
    if listed is None or tool not in {found.name for found in downstream.agent_tools()}:
        raise ExplainError("UNKNOWN_TOOL", f"{server} lists no tool {tool!r}")
    facts = CallFacts.from_declaration(
        _declaration(downstream, tool),
        server=server,
        tool=tool,
        at=at,
        annotations=listed.annotations,
        arguments=arguments,
        trusted=downstream.config.trusted,
    )
    return decide(policy, facts, MoneyLedger())


def explanation(server: str, tool: str, decision: Decision) -> str:
    """The decision as lines for a person: class and rule, why, evidence, the policy's action."""
    found = decision.reversibility
    assert found is not None, "decide() always classifies"
    lines = [f"{server}/{tool}: {found.rclass} ({found.rule}){' disclosure' if found.disclosure else ''}"]
    lines.append(f"  why: {found.rationale}")
    for key, value in found.evidence.items():
        if value is not None:
            lines.append(f"  {key}: {value}")
    lines.append(f"policy: {decision.action}")
    lines.extend(f"  {reason.code}: {reason.detail}" for reason in decision.reasons)
    return shown_lines(lines)  # a server's rationale or evidence is one line each, escaped
