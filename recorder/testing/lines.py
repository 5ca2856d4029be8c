"""Hostile JSON-RPC lines for an agent to send the stdio front: the fuzz in tests/ and bench/ share them.

``hostile_lines(seed, count, tools)`` makes ``count`` lines, each a :class:`HostileLine`: its
bytes and the id an answer must carry (None when the line has no id the front can tell, in which
case at most one answer with a null id may come, or none for a notification). Tool calls name
``tools`` (published tool names) in both protocol eras, with the arguments canonical JSON can't
hold; the rest is what a broken or hostile agent writes: lines that aren't JSON, batches, wrong
envelopes, ids of the wrong type, nesting past Python's parser, integers past its 4,300 digits.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass(frozen=True)
class HostileLine:
    line: bytes
    answered_as: list[Any]
    """The ids the front must answer, one answer each (a batch: one per request in it)."""
    null_answers: int
    """How many answers with a null id it may get (one per message whose id can't be told)."""


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _arguments(rng: random.Random) -> str:
    """Arguments as JSON text: mostly ones the record can't hold."""
    choice = rng.randrange(9)
    if choice == 0:
        return '{"deal_id": ' + "9" * rng.randint(4301, 6000) + "}"
    if choice == 1:
        return '{"deal_id": ' + _deep(rng.randint(1000, 3000)) + "}"
    if choice == 2:
        return '{"deal_id": ' + _deep(rng.randint(65, 900)) + "}"
    if choice == 3:
        return '{"x": NaN, "y": 1e400}'
    if choice == 4:
        return '{"deal_id": "\\ud800"}'
    if choice == 5:
        return rng.choice(["[]", '"x"', "null", "7"])
    if choice == 6:
        return json.dumps({"deal_id": "D-881", "n": rng.randint(2**53, 2**60)})
    if choice == 7:
        return json.dumps({"k" * rng.randint(1, 300): "v"})
    return json.dumps({"deal_id": rng.choice(["D-881", "D-882", "nope", ""])})


def _call(rng: random.Random, request_id: Any, tools: list[str]) -> str:
    meta = json.dumps(MODERN_META) if rng.random() < 0.5 else rng.choice(["{}", "null", "[]", '"m"'])
    name = (
        json.dumps(rng.choice([*tools, "no_such_tool"])) if rng.random() < 0.9 else rng.choice(["7", "null"])
    )
    params = f'{{"name": {name}, "arguments": {_arguments(rng)}, "_meta": {meta}}}'
    if rng.random() < 0.1:
        params = rng.choice(["[]", '"p"', "null", "[1, 2]"])
    return f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call", "params": {params}}}'


def _other(rng: random.Random, request_id: Any) -> str:
    method = rng.choice(["ping", "tools/list", "prompts/list", "resources/list", "no/such", "initialize"])
    params = rng.choice(
        ["", ', "params": {}', ', "params": []', ', "params": "x"', ', "params": ' + _deep(1200)]
    )
    return f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "{method}"{params}}}'


def _message(rng: random.Random, next_id: Callable[[], Any], tools: list[str]) -> tuple[str, list[Any], int]:
    """(JSON text, ids to answer, null-id answers allowed) of one message."""
    kind = rng.randrange(10)
    if kind <= 4:
        request_id = next_id()
        return _call(rng, request_id, tools), [request_id], 0
    if kind == 5:
        request_id = next_id()
        return _other(rng, request_id), [request_id], 0
    if kind == 6:  # an id of a type MCP has none of: answered, with a null id
        bad = rng.choice(["1.5", "true", "null", "{}", "[1]", "1" * 5000])
        return f'{{"jsonrpc": "2.0", "id": {bad}, "method": "ping"}}', [], 1
    if kind == 7:  # a wrong envelope: answered with its id
        request_id = next_id()
        envelope = rng.choice(['"jsonrpc": "1.0", ', "", '"jsonrpc": 2, '])
        return f'{{{envelope}"id": {json.dumps(request_id)}, "method": "ping"}}', [request_id], 0
    if kind == 8:  # a notification, well formed or not: never answered
        params = rng.choice(["{}", "[]", '"x"', _deep(1500)])
        return f'{{"jsonrpc": "2.0", "method": "notifications/nothing", "params": {params}}}', [], 0
    return rng.choice(["7", '"text"', "null", "[]"]), [], 1  # JSON, but no message


def hostile_lines(seed: int, count: int, tools: list[str]) -> Iterator[HostileLine]:
    """``count`` hostile lines, the same for the same seed."""
    rng = random.Random(seed)
    counter = iter(range(1, 10**9))

    def next_id() -> Any:
        number = next(counter)
        return number if rng.random() < 0.5 else f"h-{number}"

    for _ in range(count):
        shape = rng.randrange(10)
        if shape == 0:  # not JSON at all, or cut short
            text, ids, nulls = _message(rng, next_id, tools)
            cut = rng.randrange(1, max(2, len(text)))
            junk = rng.choice(
                [text[:cut].encode(), bytes(rng.randrange(256) for _ in range(20)), b"\xff\xfe{"]
            )
            yield HostileLine(junk.replace(b"\n", b" "), [], 1)
            continue
        if shape == 1:  # a batch: every request in it refused, each with its id
            parts = [_message(rng, next_id, tools) for _ in range(rng.randint(0, 4))]
            ids = [i for _, part_ids, _ in parts for i in part_ids]
            nulls = sum(n for _, _, n in parts) or (1 if not parts else 0)
            yield HostileLine(("[" + ", ".join(p for p, _, _ in parts) + "]").encode(), ids, nulls)
            continue
        text, ids, nulls = _message(rng, next_id, tools)
        yield HostileLine(text.encode(), ids, nulls)
