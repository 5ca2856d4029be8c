"""Lines from an agent over stdio read as JSON-RPC: every request gets an answer, even a hostile one.

The standard library's parser refuses two kinds of valid JSON: integers of more than 4,300 digits
(Python's guard against slow conversions) and nesting past its recursion limit. Both are read here
all the same (the first as a :class:`~hatp_journal.recorder.gateway.arguments.HugeInteger`, the second by
an iterative parser), so a tool call carrying them is refused with its documented code
(``ARGUMENTS_NOT_CANONICAL``, ``ARGUMENTS_TOO_DEEP``) and journaled like any other. What is not
JSON, not a JSON-RPC message or a batch gets the JSON-RPC error the specification names, with the
request's id whenever it can be told.

MCP has no batches since its 2025-06-18 version (the mcp library reads none): a batch is answered
per JSON-RPC 2.0, one ``Invalid Request`` error for each request in it, none for its notifications.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hatp_journal.recorder.gateway.arguments import HugeInteger

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

DEEP_LINE_LIMIT = 4 * 1024 * 1024
"""Longest line read by the iterative parser (about a second of one core at most); a longer one
nested past Python's limit is answered ``Parse error`` (its arguments could not be kept anyway:
``max_arguments_bytes`` is 4 MiB by default)."""

BATCH_REFUSED = (
    "batches are not supported (MCP has had no JSON-RPC batching since 2025-06-18): "
    "send each request on a line of its own"
)

scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""The standard library's string reader (its C one): a string's value and the position after it."""

_DIGITS = 4000
"""Integers with more digits than this are kept as text (Python converts at most 4,300)."""


@dataclass(frozen=True)
class Unusual:
    """A message only the Recorder's own reader reads (nested past Python's recursion limit, or with
    an integer of more than 4,300 digits): a tool call is refused for it, anything else is invalid."""

    message: Any
    why: str


@dataclass(frozen=True)
class Unreadable:
    """A line that is no JSON-RPC message: the error to answer it with."""

    code: int
    message: str
    request_id: str | int | None = None

    def answer(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}


def read_line(line: bytes) -> Any:
    """The JSON value of ``line``, :class:`Unusual` or :class:`Unreadable`; None for a blank line."""
    try:
        return json.loads(line)
    except RecursionError:
        return _read_deep(line)
    except ValueError:
        if not line.strip():
            return None
    try:  # only a line the fast road refused pays for this: an integer too long for Python?
        return Unusual(json.loads(line, parse_int=_integer), "an integer of more than 4,300 digits")
    except RecursionError:
        return _read_deep(line)
    except ValueError:
        return Unreadable(PARSE_ERROR, "Parse error: the line is not JSON")


def _integer(text: str) -> int | HugeInteger:
    return int(text) if len(text) <= _DIGITS else HugeInteger(text)


def request_id(message: Any) -> str | int | None:
    """The message's id if it is one JSON-RPC allows and MCP uses (a string or an integer)."""
    if not isinstance(message, dict):
        return None
    found = message.get("id")
    if isinstance(found, str) or (type(found) is int):
        return found
    return None


def problem(message: Any) -> Unreadable | None:
    """Why ``message`` is no JSON-RPC request, notification or response the library reads, if it is not.

    None for one it reads; its own refusals (an unknown method, params that do not fit the
    method) are the library's to give.
    """
    if not isinstance(message, dict):
        return Unreadable(INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object")
    found = request_id(message)
    if message.get("jsonrpc") != "2.0":
        return Unreadable(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', found)
    if "id" in message and found is None:
        return Unreadable(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    method = message.get("method")
    if method is None and ("result" in message or "error" in message):
        return None  # an answer to a request of the server's: the library's to match
    if not isinstance(method, str):
        return Unreadable(INVALID_REQUEST, 'Invalid Request: "method" must be a string', found)
    if "params" in message and not isinstance(message["params"], dict):
        return Unreadable(INVALID_PARAMS, 'Invalid params: "params" must be an object', found)
    return None


def batch_answer(batch: list[Any]) -> Any:
    """What answers a batch (None: nothing, it held only notifications)."""
    if not batch:
        return Unreadable(INVALID_REQUEST, "Invalid Request: an empty batch").answer()
    answers = []
    for message in batch:
        if isinstance(message, dict) and "method" in message and "id" not in message:
            continue  # a notification is never answered
        answers.append(Unreadable(INVALID_REQUEST, BATCH_REFUSED, request_id(message)).answer())
    return answers or None


_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_WORDS: dict[str, Any] = {
    "null": None,
    "true": True,
    "false": False,
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}


def _read_deep(line: bytes) -> Any:
    if len(line) > DEEP_LINE_LIMIT:
        return Unreadable(PARSE_ERROR, f"Parse error: too deep to read in over {DEEP_LINE_LIMIT} bytes")
    try:
        return Unusual(parse_deep(line.decode("utf-8")), "nested deeper than Python reads")
    except (ValueError, IndexError):
        return Unreadable(PARSE_ERROR, "Parse error: the line is not JSON")


def parse_deep(text: str) -> Any:
    """``json.loads(text)`` at any depth, without recursion (what no value nested 1,000 levels reaches).

    Raises ValueError (or IndexError at a cut-off end) for what is not JSON.
    """
    open_containers: list[Any] = []
    keys: list[str] = []  # the key each open object's next value goes under
    position = _SPACE.match(text, 0).end()  # type: ignore[union-attr]  # matches the empty string
    while True:
        value, position, opened = _value(text, position)
        if opened is not None:
            position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
            closing = "}" if isinstance(opened, dict) else "]"
            if text[position] != closing:
                open_containers.append(opened)
                if isinstance(opened, dict):
                    key, position = _key(text, position)
                    keys.append(key)
                continue
            position += 1
            value = opened
        while open_containers:  # the value is whole: put it in place, close what it completes
            container = open_containers[-1]
            if isinstance(container, dict):
                container[keys.pop()] = value
            else:
                container.append(value)
            position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
            mark = text[position]
            if mark == ",":
                position = _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
                if isinstance(container, dict):
                    key, position = _key(text, position)
                    keys.append(key)
                break
            if mark != ("}" if isinstance(container, dict) else "]"):
                raise ValueError(f"expected ',' or a closing bracket at {position}")
            position += 1
            value = open_containers.pop()
        else:
            if _SPACE.match(text, position).end() != len(text):  # type: ignore[union-attr]
                raise ValueError(f"extra data at {position}")
            return value


def _value(text: str, position: int) -> tuple[Any, int, Any]:
    """(scalar, end, None), or (None, after the bracket, the new empty container)."""
    mark = text[position]
    if mark == "{":
        return None, position + 1, {}
    if mark == "[":
        return None, position + 1, []
    if mark == '"':
        string, end = scanstring(text, position + 1)
        return string, end, None
    number = _NUMBER.match(text, position)
    if number is not None and not text.startswith("-Infinity", position):
        whole, fraction, exponent = number.groups()
        if fraction or exponent:
            return float(whole + (fraction or "") + (exponent or "")), number.end(), None
        return _integer(whole), number.end(), None
    for word, meaning in _WORDS.items():
        if text.startswith(word, position):
            return meaning, position + len(word), None
    raise ValueError(f"expected a value at {position}")


def _key(text: str, position: int) -> tuple[str, int]:
    """An object's key and the position after its colon (and the spaces after that)."""
    if text[position] != '"':
        raise ValueError(f"expected a key at {position}")
    key, position = scanstring(text, position + 1)
    position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
    if text[position] != ":":
        raise ValueError(f"expected ':' at {position}")
    return key, _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
