"""Requests from a tool server to the agent's client, relayed during a call: sampling
(``sampling/createMessage``), elicitation (``elicitation/create``) and roots (``roots/list``).

The Recorder declares all three to every tool server (some servers publish tools only to a
client that declares them). A request that arrives while exactly one call is in flight on that
server's session goes to the agent that made the call, if its client declared the capability, and
the agent's answer goes back to the server. Anything else is refused with a JSON-RPC error the
server can read, never left hanging: no call in flight, several (a request names no call, and one
agent must not answer for another), or a capability the agent's client did not declare. An agent of
the 2026 protocol era is asked in rounds (``recorder/gateway/relay_rounds.py``). Each relayed or refused
request of a call is journaled as a ``note`` of the call's run (``docs/recorder.md``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from fastmcp.client.transports.base import SessionKwargs
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INVALID_REQUEST, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.intake.journal_objects import bounded
from hatp_journal.recorder.record.written_bodies import HostNote

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
ROOTS = "roots/list"

RELAYED_PARAMS_BYTES = 65_536
"""Largest request kept whole in its note; a larger one is kept by its size and digest."""


class RelayCode(StrEnum):
    """Why a server's request did not reach the agent (a note's ``outcome.code``)."""

    NO_CALL_IN_FLIGHT = "RELAY_NO_CALL_IN_FLIGHT"
    SEVERAL_CALLS_IN_FLIGHT = "RELAY_SEVERAL_CALLS_IN_FLIGHT"
    NOT_DECLARED = "RELAY_NOT_DECLARED"
    MODERN_ERA = "RELAY_MODERN_ERA"
    AGENT_FAILED = "RELAY_AGENT_FAILED"


class AgentPeer(Protocol):
    """The agent's client as a server may reach it during one call."""

    def declares(self, method: str, params: dict[str, Any]) -> bool | None:
        """Whether the agent's client declared what ``method`` needs; None: it can't be asked at all
        (the 2026 era)."""

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The agent's answer as plain JSON; :class:`MCPError` if it answered an error."""


Journal = Callable[[HostNote], Awaitable[Any]]

agent_peer: ContextVar[AgentPeer | None] = ContextVar("agent_peer", default=None)
"""The agent's client for the call being forwarded, set by a front that serves it on the data plane
(a call the mcp library serves finds its session in the library's context)."""

call_journal: ContextVar[Journal | None] = ContextVar("call_journal", default=None)
"""Where the call being forwarded notes what its server asked (set by the gateway: the call's run)."""


@dataclass(frozen=True)
class Flight:
    """One call in flight on a server's session: where its log messages and requests go."""

    log: Any
    peer: AgentPeer | None
    journal: Journal | None


def declared(capabilities: Any, method: str, params: dict[str, Any]) -> bool:
    """Whether ``capabilities`` (a client's, plain JSON or the library's model) cover the request."""
    if isinstance(capabilities, mcp_types.ClientCapabilities):
        capabilities = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(capabilities, dict):
        return False
    if method == SAMPLING:
        sampling = capabilities.get("sampling")
        if not isinstance(sampling, dict):
            return False
        return "tools" not in params or isinstance(sampling.get("tools"), dict)
    if method == ELICITATION:
        elicitation = capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        if params.get("mode") == "url":
            return isinstance(elicitation.get("url"), dict)
        # An empty object is the form mode (the capability before modes existed).
        return not elicitation or isinstance(elicitation.get("form"), dict)
    if method == ROOTS:
        return isinstance(capabilities.get("roots"), dict)
    return False


class LibraryPeer:
    """The agent's client of a request the mcp library is serving (its session and request id)."""

    def __init__(self, session: Any, request_id: Any) -> None:
        self.session = session
        self.request_id = request_id

    def declares(self, method: str, params: dict[str, Any]) -> bool | None:
        if self.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        return declared(self.session.client_capabilities, method, params)

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request: Any
        answer: Any
        if method == SAMPLING:
            request = mcp_types.CreateMessageRequest(
                params=mcp_types.CreateMessageRequestParams.model_validate(params)
            )
            answer = (
                mcp_types.CreateMessageResultWithTools if "tools" in params else mcp_types.CreateMessageResult
            )
        elif method == ELICITATION:
            request = mcp_types.ElicitRequest.model_validate({"method": method, "params": params})
            answer = mcp_types.ElicitResult
        else:
            request, answer = mcp_types.ListRootsRequest(), mcp_types.ListRootsResult
        related = ServerMessageMetadata(related_request_id=self.request_id)
        result = await self.session.send_request(request, answer, metadata=related)
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped


def library_peer() -> AgentPeer | None:
    """The agent's client of the request the mcp library is serving now, if any."""
    from fastmcp.server.dependencies import get_context

    try:
        request = get_context().request_context
    except RuntimeError:
        return None
    if request is None:
        return None
    return LibraryPeer(request.session, request.request_id)


async def relay(
    flights: list[Flight], server: str, method: str, params: dict[str, Any]
) -> dict[str, Any] | mcp_types.ErrorData:
    """Relay one request of ``server`` to the agent of the one call in flight; its answer (plain JSON)
    or the refusal the server gets."""
    if not flights:
        return _refused(method, RelayCode.NO_CALL_IN_FLIGHT, "no call is in flight on this session")
    if len(flights) > 1:
        why = "several calls are in flight on this session and a request names none of them"
        return await _refused_noted(flights, server, method, params, RelayCode.SEVERAL_CALLS_IN_FLIGHT, why)
    [flight] = flights
    peer = flight.peer
    can = peer.declares(method, params) if peer is not None else False
    if can is None:
        why = "the agent's client speaks the 2026 protocol era, in which a server asks nothing during a call"
        return await _refused_noted(flights, server, method, params, RelayCode.MODERN_ERA, why)
    if not can or peer is None:
        why = f"the agent's client did not declare the capability {method} needs"
        return await _refused_noted(flights, server, method, params, RelayCode.NOT_DECLARED, why)
    try:
        answer = await peer.send(method, params)
    except MCPError as error:
        why = f"the agent's client answered an error: {error.error.message}"
        await _note(
            flight.journal,
            server,
            method,
            params,
            {"status": "failed", "code": str(RelayCode.AGENT_FAILED), "why": why},
        )
        return mcp_types.ErrorData(code=error.error.code, message=error.error.message, data=error.error.data)
    except (OSError, RuntimeError, ValueError) as error:  # the agent went away; its answer did not fit
        why = f"the agent's client could not be asked: {type(error).__name__}: {error}"
        await _note(
            flight.journal,
            server,
            method,
            params,
            {"status": "failed", "code": str(RelayCode.AGENT_FAILED), "why": why},
        )
        return mcp_types.ErrorData(code=INVALID_REQUEST, message=why)
    await _note(
        flight.journal, server, method, params, {"status": "relayed", "answer": _answer_kept(method, answer)}
    )
    return answer


def _refused(method: str, code: RelayCode, why: str) -> mcp_types.ErrorData:
    number = MISSING_REQUIRED_CLIENT_CAPABILITY if code is RelayCode.NOT_DECLARED else INVALID_REQUEST
    return mcp_types.ErrorData(
        code=number, message=f"the Recorder did not relay {method}: {why}", data={"code": str(code)}
    )


async def _refused_noted(
    flights: list[Flight], server: str, method: str, params: dict[str, Any], code: RelayCode, why: str
) -> mcp_types.ErrorData:
    for flight in flights:  # every call that might have been meant sees it in its run
        await _note(
            flight.journal, server, method, params, {"status": "refused", "code": str(code), "why": why}
        )
    return _refused(method, code, why)


async def _note(
    journal: Journal | None, server: str, method: str, params: dict[str, Any], outcome: dict[str, Any]
) -> None:
    if journal is None:
        return
    await journal(HostNote(server=server, tool=method, arguments=_kept(params), outcome=outcome))


def _kept(value: Any) -> Any:
    """A request or answer as the record keeps it: whole if plain and small, else its size and digest."""
    problem = bounded(value)
    if problem is not None:
        return {"rejected": f"not kept: {problem}"}
    data = canonical_bytes(value)
    if len(data) <= RELAYED_PARAMS_BYTES:
        return value
    return {
        "rejected": f"not kept: {len(data)} bytes",
        "bytes": len(data),
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
    }


def _answer_kept(method: str, answer: dict[str, Any]) -> Any:
    """What a note keeps of the agent's answer: an elicitation's action, not what the person typed
    (it is the person's, and the server got it); a sampling's model and stop reason; the roots' URIs."""
    if method == ELICITATION:
        return {"action": answer.get("action")}
    if method == SAMPLING:
        return {key: answer.get(key) for key in ("model", "stopReason") if key in answer}
    roots = answer.get("roots")
    return {
        "roots": [r.get("uri") for r in roots if isinstance(r, dict)] if isinstance(roots, list) else None
    }


def callbacks(flights: Callable[[], list[Flight]], server: str) -> SessionKwargs:
    """The mcp client session's callbacks that relay ``server``'s requests (they declare the three
    capabilities); ``flights`` tells the calls in flight on its session when a request arrives."""

    async def sampling(
        context: Any, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.CreateMessageResultWithTools | mcp_types.ErrorData:
        sent = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer = await relay(flights(), server, SAMPLING, sent)
        if isinstance(answer, mcp_types.ErrorData):
            return answer
        if "tools" in sent:
            return mcp_types.CreateMessageResultWithTools.model_validate(answer)
        return mcp_types.CreateMessageResult.model_validate(answer)

    async def elicitation(
        context: Any, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        sent = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer = await relay(flights(), server, ELICITATION, sent)
        return (
            answer
            if isinstance(answer, mcp_types.ErrorData)
            else mcp_types.ElicitResult.model_validate(answer)
        )

    async def roots(context: Any) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        answer = await relay(flights(), server, ROOTS, {})
        return (
            answer
            if isinstance(answer, mcp_types.ErrorData)
            else mcp_types.ListRootsResult.model_validate(answer)
        )

    return SessionKwargs(
        sampling_callback=sampling,
        sampling_capabilities=mcp_types.SamplingCapability(tools=mcp_types.SamplingToolsCapability()),
        elicitation_callback=elicitation,
        list_roots_callback=roots,
    )
