"""A server's requests to an agent of the 2026 protocol era, carried in rounds (``input_required``).

An agent's client of the 2026 era takes no request during a call: a server that needs its input
answers the call with ``resultType: "input_required"``, its questions (``inputRequests``) and an
opaque ``requestState``; the client answers them and calls again with ``inputResponses`` and that
state. A tool server behind the Recorder may still ask during the call (the handshake era, which
most servers speak). So the Recorder parks the call: it answers the agent's request with the
server's question as an ``input_required`` round, keeps the call running, and hands the agent's
answers, when it calls again with the state, to the waiting server; then answers with the call's
result, or with the next round. The state names the parked call (random, never reused) and must
come back with the same tool and arguments.

Each round's request is relayed, refused and journaled exactly as for the handshake era
(``recorder/gateway/relay.py``): a capability the request ``_meta`` does not declare is refused.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from hatp_journal.recorder.gateway import relay

STATE_PREFIX = "hatp-round-"
"""How the Recorder's ``requestState`` begins (the rest is random)."""

CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
"""Where a 2026-era request declares its client's capabilities (its ``_meta``)."""


@dataclass
class _Question:
    key: str
    method: str
    params: dict[str, Any]
    answer: asyncio.Future[dict[str, Any]]


@dataclass
class _Parked:
    """One call whose server asked the agent something, between the agent's requests."""

    call: tuple[str, str, str]  # server, tool, arguments digest: what the state must come back with
    task: asyncio.Task[dict[str, Any]] | None = None
    asked: asyncio.Queue[_Question] = field(default_factory=asyncio.Queue)
    open: dict[str, _Question] = field(default_factory=dict)  # asked of the agent, awaiting its answer


class _RoundPeer:
    """The agent's client as a server reaches it during a parked call: each question a round."""

    def __init__(self, parked: _Parked, capabilities: Any) -> None:
        self.parked = parked
        self.capabilities = capabilities
        self.keys = itertools.count(1)

    def declares(self, method: str, params: dict[str, Any]) -> bool | None:
        return relay.declared(self.capabilities, method, params)

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        question = _Question(
            f"q{next(self.keys)}", method, params, asyncio.get_running_loop().create_future()
        )
        self.parked.asked.put_nowait(question)
        return await question.answer


class _AsksNothing:
    """The client of a request that declares nothing a server may ask: every request is refused."""

    def declares(self, method: str, params: dict[str, Any]) -> bool | None:
        return False

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise MCPError(code=INVALID_PARAMS, message="the agent's client declared nothing to ask")


_ASKS_NOTHING = _AsksNothing()


class Rounds:
    """The parked calls of one Recorder, by the ``requestState`` the agent was given."""

    def __init__(self) -> None:
        self.parked: dict[str, _Parked] = {}

    async def answer(
        self,
        identity: Callable[[], tuple[str, str, str] | None],
        start: Callable[[], Coroutine[Any, Any, dict[str, Any]]],
        *,
        capabilities: Any,
        state: Any,
        responses: Any,
    ) -> dict[str, Any]:
        """The call's answer (``start`` makes it), or the next round of its server's questions.

        ``identity`` names the call (None: arguments the call is refused for at once, asking
        nothing); ``capabilities`` are what the request declares of its client; ``state`` and
        ``responses`` the request's ``requestState`` and ``inputResponses`` (None on a first request).
        """
        call = identity() if state is not None or _asks_anything(capabilities) else None
        if state is None and call is None:
            # Nothing it could be asked (most calls): answered in this task, no round to wait for.
            peer = relay.agent_peer.set(_ASKS_NOTHING)
            try:
                return await start()
            finally:
                relay.agent_peer.reset(peer)
        if state is None:
            assert call is not None
            parked = _Parked(call)
            context = contextvars.copy_context()
            context.run(relay.agent_peer.set, _RoundPeer(parked, capabilities))
            parked.task = asyncio.get_running_loop().create_task(start(), context=context)
        else:
            found = self.parked.pop(state, None) if isinstance(state, str) else None
            if found is None or found.call != call:
                return _refusal(
                    "INPUT_STATE_UNKNOWN",
                    "this requestState names no call waiting for its client's answers (or another call)",
                )
            parked = found
            given = responses if isinstance(responses, dict) else {}
            for key, question in parked.open.items():
                answer = given.get(key)
                if isinstance(answer, dict):
                    question.answer.set_result(answer)
                else:
                    missing = MCPError(
                        code=INVALID_PARAMS, message=f"the agent's client sent no answer to {key}"
                    )
                    question.answer.set_exception(missing)
            parked.open = {}
        return await self._next(parked)

    async def _next(self, parked: _Parked) -> dict[str, Any]:
        assert parked.task is not None
        asking = asyncio.ensure_future(parked.asked.get())
        try:
            await asyncio.wait({parked.task, asking}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not asking.done():
                asking.cancel()
        if not asking.done() or asking.cancelled():
            return parked.task.result()
        questions = [asking.result()]
        while not parked.asked.empty():  # asked at once: one round
            questions.append(parked.asked.get_nowait())
        parked.open = {q.key: q for q in questions}
        state = STATE_PREFIX + secrets.token_urlsafe(24)
        self.parked[state] = parked
        return {
            "resultType": "input_required",
            "inputRequests": {q.key: {"method": q.method, "params": q.params} for q in questions},
            "requestState": state,
            "_meta": {},
        }


def _asks_anything(capabilities: Any) -> bool:
    """Whether a client declares anything a server may ask of it (sampling, elicitation, roots)."""
    if capabilities is None:
        return False
    names = ("sampling", "elicitation", "roots")
    if isinstance(capabilities, dict):
        return any(isinstance(capabilities.get(name), dict) for name in names)
    return any(getattr(capabilities, name, None) is not None for name in names)


def request_rounds(params: Any) -> tuple[Any, Any]:
    """(``requestState``, ``inputResponses``) of a 2026-era request's params, as sent."""
    if not isinstance(params, dict):
        return None, None
    return params.get("requestState"), params.get("inputResponses")


def declared_capabilities(meta: Any) -> Any:
    """What a 2026-era request declares of its client (its ``_meta``)."""
    return meta.get(CLIENT_CAPABILITIES) if isinstance(meta, dict) else None


def _refusal(code: str, message: str) -> dict[str, Any]:
    body = {"code": code, "message": message}
    return {
        "content": [{"type": "text", "text": f"{code}: {message}"}],
        "structuredContent": body,
        "_meta": {"hatp/recorder": body},
        "isError": True,
    }
