"""``hatp-recorder explain SERVER TOOL [--args JSON]``: a tool's reversibility class, the rule
and evidence behind it, and what the policy would decide, without calling the tool. ``TOOL`` may be
``prompts/get`` (``--args '{"name": …, "arguments": {…}}'``) or ``resources/read``
(``--args '{"uri": …}'``): a get or read is decided as the gateway decides it (:mod:`.prompt_policy`)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hatp_journal._shared.text import shown_lines
from hatp_journal.recorder.config import RecorderConfig
from hatp_journal.recorder.gateway import kept_tools
from hatp_journal.recorder.gateway.call_facts import ListedServer, for_call, tool_facts
from hatp_journal.recorder.gateway.prompt_policy import (
    PROMPT_TOOL,
    READ_TOOL,
    REFUSAL_CODES,
    Asked,
    passthrough_class,
    passthrough_facts,
)
from hatp_journal.recorder.policy import Decision, MoneyLedger, Policy, decide
from hatp_journal.recorder.policy.classes import CLASS_MEANINGS, ClassOrigin

EXPLAINED_RUN = "explain"
"""The run an explained call is decided in: a run of its own, with nothing spent (a per-run cap
then judges the call's own amount, as the gateway does for a run's first call)."""


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


@dataclass(frozen=True)
class Explained:
    """What explain says about a call: the decision the gateway would make, and what undo exists
    for it, in words."""

    server: str
    tool: str
    decision: Decision
    undo: str
    listed_at: str | None = None
    """When the tool list decided from was kept (None: the server listed it just now)."""


async def explain(
    config: RecorderConfig,
    policy: Policy,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    at: datetime,
    *,
    refresh: bool = False,
) -> Explained:
    """Decide a call of ``tool`` from ``server``'s tool list as the Recorder's last connect kept
    it (:mod:`.kept_tools`), or, with none that still holds or with ``refresh``, start the server as
    the Recorder would, read its tool list (and keep it) and decide from that.

    Nothing is called but ``tools/list`` (and a journal-aware server's keys), nothing is pinned,
    and no money spent so far is counted: caps see an empty ledger.
    """
    settings = config.servers.get(server)
    if settings is None:
        known = ", ".join(sorted(config.servers))
        raise ExplainError("UNKNOWN_SERVER", f"no server {server!r} in the configuration (known: {known})")
    store = config.recorder.store
    pinned = kept_tools.pinned_now(settings, store, server)
    found = None if refresh else kept_tools.kept(store, server, settings, pinned)
    if found is not None:
        return replace(explain_listed(found, policy, tool, arguments, at), listed_at=found.kept_at)
    # lazy: only to start the server: the MCP stack takes longer to import than a kept answer.
    from hatp_journal.recorder.gateway.downstream import Downstream

    downstream = Downstream(server, settings)
    async with AsyncExitStack() as stack:
        await downstream.connect(stack)
    kept_tools.keep(store, downstream, pinned)
    return explain_listed(downstream, policy, tool, arguments, at)


def explain_listed(
    downstream: ListedServer, policy: Policy, tool: str, arguments: dict[str, Any], at: datetime
) -> Explained:
    """:func:`decide_listed`, with what undo exists for the call."""
    decision = decide_listed(downstream, policy, tool, arguments, at)
    return Explained(downstream.name, tool, decision, undo_words(downstream, policy, tool, decision))


def decide_listed(
    downstream: ListedServer, policy: Policy, tool: str, arguments: dict[str, Any], at: datetime
) -> Decision:
    """What the policy would decide for a call of ``tool`` of a connected ``downstream``: the
    gateway's facts and decision (:mod:`.call_facts`), in a run that has spent nothing yet."""
    server = downstream.name
    if tool in (PROMPT_TOOL, READ_TOOL):
        asked = asked_of(tool, arguments)
        trusted = downstream.config.trusted
        reversibility = passthrough_class(policy.host_registry(), server, trusted, asked)
        keys = frozenset(downstream.keys)
        facts = passthrough_facts(asked, server, trusted, keys, reversibility, at, EXPLAINED_RUN)
        return decide(policy, facts, MoneyLedger())
    listed = downstream.tools.get(tool)
    if listed is None or tool not in {found.name for found in downstream.agent_tools()}:
        raise ExplainError("UNKNOWN_TOOL", f"{server} lists no tool {tool!r}")
    facts = for_call(tool_facts(downstream, tool), arguments, at, EXPLAINED_RUN)
    return decide(policy, facts, MoneyLedger())


def asked_of(method: str, arguments: dict[str, Any]) -> Asked:
    """The get or read ``--args`` describes, as its journal entry's ``arguments`` would."""
    if method == READ_TOOL:
        uri = arguments.get("uri")
        if not isinstance(uri, str) or set(arguments) != {"uri"}:
            raise ExplainError("BAD_ARGUMENTS", 'resources/read takes --args \'{"uri": "…"}\'')
        return Asked.read(uri)
    name, given = arguments.get("name"), arguments.get("arguments", {})
    if (
        not isinstance(name, str)
        or not isinstance(given, dict)
        or not set(arguments) <= {"name", "arguments"}
    ):
        raise ExplainError(
            "BAD_ARGUMENTS",
            'prompts/get takes --args \'{"name": "…", "arguments": {…}}\' (arguments optional)',
        )
    return Asked.prompt(name, given)


def undo_words(downstream: ListedServer, policy: Policy, tool: str, decision: Decision) -> str:
    """What undo exists for a call of ``tool``, as the Recorder would plan it."""
    found = decision.reversibility
    assert found is not None, "decide() always classifies"
    if found.disclosure:
        said = found.evidence.get("reason")
        return "none: it cannot be taken back" + (f" ({said})" if said else "")
    if found.rclass == "R0":
        return "nothing to undo: the call changes nothing"
    if tool in (PROMPT_TOOL, READ_TOOL):
        return "none known: the Recorder cannot undo a get or read"
    facts = tool_facts(downstream, tool)
    if downstream.journal_aware and downstream.keys and facts.kind == "compensate":
        window = f", for {facts.window_seconds} s" if facts.window_seconds is not None else ""
        return f"the server undoes it (compensate via {facts.via}{window}) once a person approves a plan"
    compensation = (
        None if downstream.journal_aware else policy.host_registry().compensation(downstream.name, tool)
    )
    if compensation is not None:
        inverse = ", then ".join(call.tool for call in compensation.inverses())
        return f"the host undoes it with {inverse} (registry compensation) once a person approves a plan"
    return "none known: the Recorder cannot undo this call"


def explanation(explained: Explained, policy: Policy) -> str:
    """The decision as lines for a person: the class in words, the rule, why, the evidence, the
    policy's action with its reasons, what undo exists and how the verdict could change."""
    decision, server, tool = explained.decision, explained.server, explained.tool
    found = decision.reversibility
    assert found is not None, "decide() always classifies"
    lines = [f"{server}/{tool}: {found.rclass} ({found.rule}){' disclosure' if found.disclosure else ''}"]
    lines.append(f"  class: {found.rclass}, {CLASS_MEANINGS[found.rclass]}")
    lines.append(f"  decided by: {found.source}")
    lines.append(f"  why: {found.rationale}")
    for key, value in found.evidence.items():
        if value is not None:
            lines.append(f"  {key}: {value}")
    lines.append(f"policy: {decision.action}")
    lines.extend(f"  {reason.code}: {reason.detail}" for reason in decision.reasons)
    passthrough = tool in (PROMPT_TOOL, READ_TOOL)
    if passthrough and decision.action != "allow":
        code = REFUSAL_CODES[tool]
        lines.append(f"  refused: {code}, before anything reaches the server (a get or read can't wait)")
    lines.append(f"undo: {explained.undo}")
    lines.append(f"to change: {passthrough_change() if passthrough else how_to_change(decision, policy)}")
    return shown_lines(lines)  # a server's rationale or evidence is one line each, escaped


def passthrough_change() -> str:
    """Who or what can change the verdict on a get or read (docs/policy.md, "Prompts and resources")."""
    return (
        "no person can approve a single get or read; for every one: a prompts or resources entry in"
        " the server's registry file (registry.files, mapped by registry.servers), with a policy"
        " that allows its class"
    )


def how_to_change(decision: Decision, policy: Policy) -> str:
    """One sentence: who or what can change the verdict (docs/policy.md, "Precedence")."""
    found = decision.reversibility
    assert found is not None, "decide() always classifies"
    if decision.action == "ask":
        approver = policy.autonomy.approver or policy.undo_authority or "an approver"
        first = f"a person holding {approver} approves this one call (hatp-recorder asks, then approve)"
    else:
        first = "a class override raising the class, or the policy's action for it, makes it ask"
    if found.disclosure:
        return f"{first}; a disclosure is never lowered"
    by_source = {
        ClassOrigin.HOST_DEFAULT: "a registry entry for the tool, a class override by a person holding "
        "classAuthority, or trusted = true in recorder.toml if you trust the server",
        ClassOrigin.SERVER_DECLARATION: "a registry entry or a class override outranks what the server "
        "declares; trusted = false makes its word count only to raise the class",
        ClassOrigin.SERVER_HINTS: "a registry entry or a class override outranks the server's hints; "
        "trusted = false stops them counting",
        ClassOrigin.HOST_REGISTRY: "a class override in the policy "
        "(lowering needs a person holding classAuthority)",
        ClassOrigin.HOST_OVERRIDE: "the class override in the policy",
    }
    return f"{first}; for every call: {by_source.get(found.source, by_source[ClassOrigin.HOST_DEFAULT])}"


AGENT_VISIBLE = ("server", "tool", "action", "class", "meaning", "undo")
"""What the agent learns of a decision (docs/policy.md, "What the agent learns"): whether the call
would run or wait, its class and what that means, and what undo exists. Never the reasons, the
rule or evidence, who approves, overrides and their authors, caps, windows or the policy digest."""


def for_agent(explained: Explained) -> dict[str, Any]:
    """``hatp_explain``'s answer: the :data:`AGENT_VISIBLE` members, and a sentence of them."""
    decision = explained.decision
    found = decision.reversibility
    assert found is not None, "decide() always classifies"
    runs = "would run now" if decision.action == "allow" else "would wait for a person's approval"
    if decision.action != "allow" and explained.tool in (PROMPT_TOOL, READ_TOOL):
        runs = "would be refused (a get or read can't wait for a person's approval)"
    answer = {
        "server": explained.server,
        "tool": explained.tool,
        "action": decision.action,
        "class": found.rclass,
        "meaning": CLASS_MEANINGS[found.rclass],
        "undo": explained.undo,
    }
    named = f"{explained.server}/{explained.tool}"
    said = f"{named} {runs}. {found.rclass}, {answer['meaning']}. Undo: {explained.undo}."
    return {**answer, "text": said}
