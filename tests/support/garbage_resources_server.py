"""A stdio MCP server of the handshake era, written by hand, that lists two resources and answers
a read of ``junk://contents`` with a result that is not a ReadResourceResult, and a read of
``junk://mixed`` with a content of a type MCP does not have. Run as a script."""

from __future__ import annotations

import json
import sys
from typing import Any

RESOURCES = [
    {"uri": "junk://contents", "name": "contents", "mimeType": "text/plain"},
    {"uri": "junk://mixed", "name": "mixed", "mimeType": "text/plain"},
]
GARBAGE: dict[str, Any] = {
    "junk://contents": {"contents": "not a list"},
    "junk://mixed": {"contents": [{"uri": "junk://mixed", "neither": "text nor blob"}]},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        result: Any = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"resources": {}},
            "serverInfo": {"name": "junk", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "resources/list":
        result = {"resources": RESOURCES}
    elif method == "resources/read":
        result = GARBAGE.get(message.get("params", {}).get("uri"), {"contents": []})
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main() -> None:
    for line in sys.stdin:
        said = answer(json.loads(line))
        if said is not None:
            sys.stdout.write(json.dumps(said) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
