"""A FastMCP server whose ``hatp_journal_keys`` answers garbage of one kind.

``python hostile_keys_server.py KIND`` serves it over stdio; ``GARBAGE`` names every kind and
``server(kind)`` builds one in this process, for in-memory tests.
"""

import sys
from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult

from hatp_journal.toolkit import SigningKey
from hatp_journal.toolkit._server import error_result
from hatp_journal.toolkit.errors import ErrorCode
from hatp_journal.toolkit.signing import b64url
from hatp_journal.toolkit.wire import KEYS_TOOL, META_KEY


def _key(**changes: Any) -> dict[str, Any]:
    """A well-formed published key, with ``changes`` made to it."""
    return {**SigningKey.generate().public.wire().wire(), **changes}


def _answer(journal: Any) -> Callable[[], ToolResult]:
    return lambda: ToolResult(content="keys", meta={META_KEY: journal})


def _raise() -> ToolResult:
    raise ToolError("the key store is down")


def _deep(depth: int) -> Any:
    value: Any = _key()
    for _ in range(depth):
        value = {"keys": [value]}
    return value


GARBAGE: dict[str, Callable[[], ToolResult]] = {
    "no-journal-meta": lambda: ToolResult(content="my keys are in a safe place"),
    "null": _answer(None),
    "not-an-object": _answer("keys, please"),
    "a-list": _answer([_key()]),
    "keys-missing": _answer({"server": "hostile"}),
    "wrong-types": _answer({"server": 7, "keys": {"kid": 1}}),
    "unknown-field": _answer({"server": "hostile", "keys": [_key()], "trustMe": True}),
    "unknown-alg": _answer({"server": "hostile", "keys": [_key(alg="RSA")]}),
    "no-keys": _answer({"server": "hostile", "keys": []}),
    "bad-base64": _answer({"server": "hostile", "keys": [_key(publicKey="%%% not base64 %%%")]}),
    "not-ascii-base64": _answer({"server": "hostile", "keys": [_key(publicKey="ключ-ключ")]}),
    "not-32-bytes": _answer({"server": "hostile", "keys": [_key(publicKey=b64url(b"short"))]}),
    "kid-not-its-key": _answer({"server": "hostile", "keys": [_key(kid=_key()["kid"])]}),
    "error-result": lambda: error_result(ErrorCode.TOOL_FAILED, "no keys today"),
    "tool-raises": _raise,
    "huge-list": _answer({"server": "hostile", "keys": [_key()] * 10_000}),
    "huge-string": _answer({"server": "hostile", "keys": [_key(publicKey="A" * 1_000_000)]}),
    "deep": _answer(_deep(60)),
}


def server(kind: str) -> FastMCP:
    """A journal-aware-looking server whose keys answer is ``GARBAGE[kind]``."""
    mcp = FastMCP("hostile")
    mcp.tool(GARBAGE[kind], name=KEYS_TOOL)
    return mcp


if __name__ == "__main__":
    server(sys.argv[1]).run(show_banner=False)
