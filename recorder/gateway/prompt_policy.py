"""Getting a prompt of a server the host classes by its registry is a call like any other: the
``fetch`` prompt of ``mcp-server-fetch`` makes a GET for the URL the agent gave it. Such a get is
classed (a prompt the registry file names, else R4: nothing classifies it, whatever the server says),
decided by the policy and journaled with the decision; one the policy would not let through on its
own is refused (``PROMPT_NOT_ALLOWED``) before anything reaches the server. A prompt can't wait for a
person's approval: ``prompts/get`` has no answer that says "pending" (docs/policy.md, "Prompts").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from hatp_journal.recorder.gateway.arguments import check_arguments
from hatp_journal.recorder.policy.classes import ClassVerdict, ServerTrust, classify
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.record.written_bodies import CallRecord, Outcome, RefusedRecord

if TYPE_CHECKING:
    from hatp_journal.recorder.gateway.core import Recorder

T = TypeVar("T")

PROMPT_TOOL = "prompts/get"
"""The ``tool`` of a prompt get's entry: the MCP method, which no tool name can be (a slash)."""

PROMPT_NOT_ALLOWED = "PROMPT_NOT_ALLOWED"


def prompt_class(recorder: Recorder, server: str, prompt: str) -> ClassVerdict | None:
    """The class of getting ``prompt`` of ``server``; None when no registry file classes the server
    (its prompts are passed through, as before the host classed anything)."""
    record = recorder.policy.host_registry().record_for(server)
    if record is None:
        return None
    downstream = recorder.downstreams[server]
    trust = ServerTrust(trusted=downstream.config.trusted, keyed=bool(downstream.keys))
    # No declaration, no hints: a prompt the file does not name is R4 (unknown), trusted or not.
    return classify(None, record.judge_prompt(prompt), None, trust)


async def decided_prompt(
    recorder: Recorder,
    server: str,
    prompt: str,
    arguments: dict[str, Any] | None,
    reversibility: ClassVerdict,
    render: Callable[[], Awaitable[T]],
) -> T:
    """Decide getting ``prompt`` with ``arguments``; ``render`` it if the policy allows, journaled as a
    ``call`` entry with the decision, else journal a ``refused`` entry and raise ``PROMPT_NOT_ALLOWED``."""
    run = recorder.own_run()
    section = recorder.config.recorder
    asked = {"name": prompt, "arguments": dict(arguments or {})}
    checked = check_arguments(asked, section.max_arguments_bytes)
    kept: dict[str, Any] = (
        {"arguments": asked, "argumentsDigest": checked.digest}
        if checked.refusal is None
        else checked.refusal.kept
    )
    facts = CallFacts(
        server=server,
        tool=PROMPT_TOOL,
        kind="unknown",
        at=recorder.clock(),
        run=run,
        server_keys=frozenset(recorder.downstreams[server].keys),
        trusted=recorder.downstreams[server].config.trusted,
        arguments=asked,
        reversibility=reversibility,
    )
    decision, _ = recorder.ledger.decide(recorder.policy, facts)  # no amount: nothing is held
    who = {"agent": section.agent, "principal": section.principal, "server": server, "tool": PROMPT_TOOL}
    if decision.action != "allow" or checked.refusal is not None:
        code = PROMPT_NOT_ALLOWED if checked.refusal is None else checked.refusal.code
        refused = RefusedRecord.model_validate({**who, **kept, "code": code, "decision": decision.wire()})
        entry = await recorder.store.append_async(run, "refused", refused.wire())
        said = (
            f"{code}: getting the prompt {prompt!r} of {server} is {reversibility.rclass}"
            f" ({reversibility.rule}: {reversibility.rationale}) and the policy says {decision.action};"
            " nothing was sent to the server. A prompt can't wait for a person's approval."
            if checked.refusal is None
            else f"{code}: {checked.refusal.reason}"
        )
        data = {"code": code, "entry": entry.id, "class": reversibility.rclass, "rule": reversibility.rule}
        raise MCPError(INVALID_REQUEST, said, data)
    body: dict[str, Any] = {
        **who,
        "arguments": asked,
        "arguments_digest": checked.digest,
        "declared": facts.kind,
        "intake": {"status": "absent", "kind": facts.kind},
        "decision": decision.wire(),
    }
    try:
        result = await render()
    except Exception as error:
        failed = Outcome(status="error", error=f"{type(error).__name__}: {error}")
        await recorder.append_call(run, CallRecord.model_validate({**body, "outcome": failed}).wire())
        raise
    await recorder.append_call(
        run, CallRecord.model_validate({**body, "outcome": Outcome(status="ok")}).wire()
    )
    return result
