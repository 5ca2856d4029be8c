"""Getting a prompt or reading a resource is a call like any other: the ``fetch`` prompt of
``mcp-server-fetch`` makes a GET for the URL the agent gave it, and a server may do anything when a
resource is read. Each get and read is classed (a prompt or resource the server's registry file
names, else R4: nothing classifies it, whatever the server says, trusted or not), decided by the
policy and journaled with the decision; one the policy would not let through on its own is refused
(``PROMPT_NOT_ALLOWED``, ``RESOURCE_NOT_ALLOWED``) before anything reaches the server. Neither can
wait for a person's approval: ``prompts/get`` and ``resources/read`` have no answer that says
"pending" (docs/policy.md, "Prompts and resources").

The class and the facts are worked out here for the gateway and for ``explain`` alike, so that both
decide the same get or read the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from hatp_journal.recorder.gateway.arguments import check_arguments
from hatp_journal.recorder.policy.classes import ClassSource, ClassVerdict, verdict
from hatp_journal.recorder.policy.facts import CallFacts
from hatp_journal.recorder.policy.registry import Registry
from hatp_journal.recorder.policy.resource_names import unsafe
from hatp_journal.recorder.record.written_bodies import CallRecord, Outcome, RefusedRecord

if TYPE_CHECKING:
    from hatp_journal.recorder.gateway.core import Recorder

T = TypeVar("T")

PROMPT_TOOL: Final = "prompts/get"
"""The ``tool`` of a prompt get's entry: the MCP method, which no tool name can be (a slash)."""
READ_TOOL: Final = "resources/read"
"""The ``tool`` of a resource read's entry: the MCP method, which no tool name can be (a slash)."""
Method = Literal["prompts/get", "resources/read"]

PROMPT_NOT_ALLOWED = "PROMPT_NOT_ALLOWED"
RESOURCE_NOT_ALLOWED = "RESOURCE_NOT_ALLOWED"
REFUSAL_CODES: dict[str, str] = {PROMPT_TOOL: PROMPT_NOT_ALLOWED, READ_TOOL: RESOURCE_NOT_ALLOWED}
"""What refuses a get or read the policy does not allow (the error's and the ``refused`` entry's code)."""


class _RefusalsAreNotFailures(logging.Filter):
    """fastmcp logs every error a prompt or resource raises as a failure, with its traceback; a
    refusal is the policy at work, and the journal has it: not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        data = error.data if isinstance(error, MCPError) else None
        return not (isinstance(data, dict) and data.get("code") in REFUSAL_CODES.values())


logging.getLogger("fastmcp.server.server").addFilter(_RefusalsAreNotFailures())


@dataclass(frozen=True)
class Asked:
    """One get or read as the agent asked it: the method, the prompt's name or the resource's URI,
    and the entry's ``arguments`` (``{"name", "arguments"}`` or ``{"uri"}``)."""

    method: Method
    name: str
    arguments: dict[str, Any]

    @classmethod
    def prompt(cls, name: str, arguments: dict[str, Any] | None) -> Asked:
        return cls(PROMPT_TOOL, name, {"name": name, "arguments": dict(arguments or {})})

    @classmethod
    def read(cls, uri: str) -> Asked:
        return cls(READ_TOOL, uri, {"uri": uri})

    @property
    def what(self) -> str:
        """The get or read in words, for the agent's error (the name escaped: it is the agent's)."""
        if self.method == PROMPT_TOOL:
            return f"getting the prompt {self.name!r}"
        return f"reading {self.name!r}"

    @property
    def refusal_code(self) -> str:
        return REFUSAL_CODES[self.method]


def passthrough_class(registry: Registry, server: str, trusted: bool, asked: Asked) -> ClassVerdict:
    """The class of ``asked`` of ``server``: the registry file's entry for the prompt or resource,
    else R4 (``unknown``, ``host-default``). No declaration and no hints: a server's word on a
    prompt or resource has nowhere to be said, so trust changes nothing."""
    record = registry.record_for(server)
    noun = "prompt" if asked.method == PROMPT_TOOL else "resource"
    if record is None:
        said = f"nothing classifies this {noun}: no registry file classifies the server {server}"
        return verdict("R4", ClassSource.UNKNOWN, said, trusted=trusted)
    prompt = asked.method == PROMPT_TOOL
    found = record.judge_prompt(asked.name) if prompt else record.judge_resource(asked.name)
    if found is not None:
        return found
    said = f"nothing classifies this {noun}: the registry file {record.file.server.id} does not name it"
    if asked.method == READ_TOOL and (why := unsafe(asked.name)) is not None:
        said = f"{said} ({why})"
    return verdict("R4", ClassSource.UNKNOWN, said, trusted=trusted, registry=record.file.server.id)


def passthrough_facts(
    asked: Asked,
    server: str,
    trusted: bool,
    server_keys: frozenset[str],
    reversibility: ClassVerdict,
    at: datetime,
    run: str | None,
) -> CallFacts:
    """What the policy decides ``asked`` from: kind ``unknown`` (nothing declares how to undo it)
    and the class already worked out, which no class override changes."""
    return CallFacts(
        server=server,
        tool=asked.method,
        kind="unknown",
        at=at,
        run=run,
        server_keys=server_keys,
        trusted=trusted,
        arguments=asked.arguments,
        reversibility=reversibility,
    )


def class_at(recorder: Recorder, server: str, asked: Asked) -> ClassVerdict:
    """:func:`passthrough_class` for a server of the running Recorder."""
    trusted = recorder.downstreams[server].config.trusted
    return passthrough_class(recorder.policy.host_registry(), server, trusted, asked)


async def decided(
    recorder: Recorder,
    server: str,
    asked: Asked,
    forward: Callable[[], Awaitable[T]],
) -> T:
    """Decide ``asked``; ``forward`` it if the policy allows, journaled as a ``call`` entry with the
    decision (failed or not), else journal a ``refused`` entry and raise the refusal's code."""
    reversibility = class_at(recorder, server, asked)
    run = recorder.own_run()
    section = recorder.config.recorder
    checked = check_arguments(asked.arguments, section.max_arguments_bytes)
    kept: dict[str, Any] = (
        {"arguments": asked.arguments, "argumentsDigest": checked.digest}
        if checked.refusal is None
        else checked.refusal.kept
    )
    downstream = recorder.downstreams[server]
    facts = passthrough_facts(
        asked,
        server,
        downstream.config.trusted,
        frozenset(downstream.keys),
        reversibility,
        recorder.clock(),
        run,
    )
    decision, _ = recorder.ledger.decide(recorder.policy, facts)  # no amount: nothing is held
    who = {"agent": section.agent, "principal": section.principal, "server": server, "tool": asked.method}
    if decision.action != "allow" or checked.refusal is not None:
        code = asked.refusal_code if checked.refusal is None else checked.refusal.code
        refused = RefusedRecord.model_validate({**who, **kept, "code": code, "decision": decision.wire()})
        entry = await recorder.store.append_async(run, "refused", refused.wire())
        said = (
            f"{code}: {asked.what} of {server} is {reversibility.rclass}"
            f" ({reversibility.rule}: {reversibility.rationale}) and the policy says {decision.action};"
            " nothing was sent to the server. A prompt or a read can't wait for a person's approval."
            if checked.refusal is None
            else f"{code}: {checked.refusal.reason}"
        )
        data = {"code": code, "entry": entry.id, "class": reversibility.rclass, "rule": reversibility.rule}
        raise MCPError(INVALID_REQUEST, said, data)
    body: dict[str, Any] = {
        **who,
        "arguments": asked.arguments,
        "arguments_digest": checked.digest,
        "declared": facts.kind,
        "intake": {"status": "absent", "kind": facts.kind},
        "decision": decision.wire(),
    }
    try:
        result = await forward()
    except Exception as error:
        failed = Outcome(status="error", error=f"{type(error).__name__}: {error}")
        await recorder.append_call(run, CallRecord.model_validate({**body, "outcome": failed}).wire())
        raise
    await recorder.append_call(
        run, CallRecord.model_validate({**body, "outcome": Outcome(status="ok")}).wire()
    )
    return result
