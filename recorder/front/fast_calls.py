"""Which JSON-RPC messages the Recorder's data plane answers itself, shared by its stdio and HTTP fronts.

A ``tools/call`` of a published tool in the 2026 protocol era (its request ``_meta`` names the
version, so no session state is needed), or on a connection of the handshake era once its
``initialize`` is answered, goes straight to :meth:`Recorder.answer`; anything else is the mcp
library's to answer.
"""

from __future__ import annotations

from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"

FastCall = tuple[str, str, dict[str, Any], Any]
"""(server, tool, arguments, request ``_meta``) of a call the data plane answers."""


def fast_call(
    forwards: dict[str, tuple[str, str]], message: Any, *, handshake: bool = False
) -> FastCall | None:
    """The call ``message`` makes, if the data plane answers it; else None.

    ``forwards`` maps each published tool's name to its (server, tool). ``handshake``: the
    connection has done the handshake era's ``initialize``, so a call without the 2026 era's
    ``_meta`` is the data plane's too (its session state, the negotiated version, is settled).
    """
    if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if handshake:
        if meta is not None and not isinstance(meta, dict):
            return None  # the library refuses it
    elif not isinstance(meta, dict) or meta.get(PROTOCOL_VERSION) not in MODERN_PROTOCOL_VERSIONS:
        return None  # a handshake-era call before its initialize: the library serves it
    name = params.get("name")
    forward = forwards.get(name) if isinstance(name, str) else None
    arguments = params.get("arguments", {})
    if forward is None or not isinstance(arguments, dict):
        return None  # not ours to answer fast: unknown tools and bad params get the library's error
    return forward[0], forward[1], arguments, meta


def as_sent(result: dict[str, Any], stamp: Any) -> dict[str, Any]:
    """``result`` of :meth:`Recorder.answer` as the library would send it: complete, server stamped."""
    result.setdefault("resultType", "complete")
    meta = result.get("_meta")
    if isinstance(meta, dict) and meta.get(SERVER_INFO) is None:
        result["_meta"] = {**meta, SERVER_INFO: stamp}
    return result


def as_sent_in_handshake_era(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of :meth:`Recorder.answer` as the library sends it on a handshake-era connection:
    no ``resultType``, ``structuredContent`` and ``isError`` always said (null and false if absent)."""
    result.setdefault("structuredContent", None)
    result["isError"] = bool(result.get("isError"))
    return result


def modern(meta: Any) -> bool:
    """Whether a request's ``_meta`` puts it in the 2026 protocol era."""
    return isinstance(meta, dict) and meta.get(PROTOCOL_VERSION) in MODERN_PROTOCOL_VERSIONS
