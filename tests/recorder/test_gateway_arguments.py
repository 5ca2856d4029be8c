"""Agent input the Run Record can't hold as it is: the call is journaled without it and refused.

An integer beyond ±(2^53 - 1), a lone surrogate, nesting deeper than 64 or arguments over
``max_arguments_bytes`` can't go into an RFC 8785 entry; a journal object over
``max_journal_bytes`` is not kept whole; a host meta the record can't hold is marked rejected.
The agent is a real MCP client over the in-memory transport (which carries big integers and lone
surrogates as they are); NaN and Infinity, which only a JSON text can carry, are sent over stdio
in ``test_recorder_arguments_over_stdio.py``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from arguments_world import World, opened

from hatp_journal._shared.canonical import canonical_bytes, sha256_digest
from hatp_journal.recorder.config import ConfigError, load_config
from hatp_journal.recorder.record import Entry

pytestmark = pytest.mark.anyio

DEFAULT_MAX_ARGUMENTS_BYTES = 4 * 1024 * 1024


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with opened(tmp_path) as opened_world:
        yield opened_world


async def call(world: World, tool: str, arguments: dict[str, Any], **options: Any) -> tuple[Any, Entry]:
    """The agent's call, what it was told, and the one entry it added to the record."""
    before = len(world.entries())
    result = await world.agent.call_tool_mcp(tool, arguments, **options)
    entries = world.entries()
    assert len(entries) == before + 1
    return result, entries[-1]


def told(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result
    content: dict[str, Any] = result.structured_content
    return content


def text_digest(arguments: dict[str, Any]) -> str:
    """What an agent computes from the arguments it sent to match ``textDigest``."""
    text = json.dumps(arguments, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


@pytest.mark.parametrize("amount", [2**53, -(2**53), 10**30])
async def test_an_integer_beyond_2_53_is_journaled_without_its_value_refused_and_never_forwarded(
    world: World, amount: int
) -> None:
    arguments = {"note": "pay", "amount": amount}

    result, entry = await call(world, "echo_echo", arguments)

    assert result.is_error
    assert told(result)["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert told(result)["entry"] == entry.id
    assert entry.kind == "refused"
    assert entry.body["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert "arguments" not in entry.body
    assert "argumentsDigest" not in entry.body
    refused = entry.body["argumentsRefused"]
    assert refused["path"] == "/amount"
    assert refused["textDigest"] == text_digest(arguments)
    assert str(amount) not in json.dumps(entry.body)
    assert world.received == []
    assert world.verifies()


async def test_the_largest_safe_integers_go_through_as_sent(world: World) -> None:
    arguments = {"high": 2**53 - 1, "low": -(2**53 - 1)}

    result, entry = await call(world, "echo_echo", arguments)

    assert not result.is_error
    assert entry.kind == "call"
    assert entry.body["arguments"] == arguments
    assert entry.body["argumentsDigest"] == sha256_digest(arguments)
    assert world.received == [arguments]


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"to": "buyer@globex.com", "text": "a\ud800b"}, "/text"),
        ({"lines": ["ok", {"note": "\udfff"}]}, "/lines/1/note"),
    ],
)
async def test_a_lone_surrogate_in_a_value_or_a_key_is_journaled_as_where_it_was_and_refused(
    world: World, arguments: dict[str, Any], path: str
) -> None:
    result, entry = await call(world, "echo_echo", arguments)

    assert result.is_error
    assert told(result)["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert entry.kind == "refused"
    assert entry.body["argumentsRefused"]["path"] == path
    assert entry.body["argumentsRefused"]["textDigest"] == text_digest(arguments)
    assert "arguments" not in entry.body
    assert world.received == []
    assert world.verifies()


async def test_a_key_with_a_lone_surrogate_is_named_with_an_escape_in_the_entry_and_refused(
    world: World,
) -> None:
    # The in-memory client mangles such a key (and refuses a nested one), but HTTP's JSON parser
    # hands it over as it is: called here as the agent-facing tool calls the Recorder.
    arguments = {"lines": [{"k\udc00/x": 1}]}

    result = await world.recorder.handle("echo", "echo", arguments)
    [entry] = world.entries()

    assert result.structured_content is not None
    assert result.structured_content["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert entry.body["argumentsRefused"]["path"] == "/lines/0/k\\udc00~1x"
    assert entry.body["argumentsRefused"]["textDigest"] == text_digest(arguments)
    assert world.received == []
    assert world.verifies()


async def test_arguments_over_the_default_limit_are_journaled_by_size_and_digest_only_and_refused(
    world: World,
) -> None:
    arguments = {"text": "x" * DEFAULT_MAX_ARGUMENTS_BYTES}

    result, entry = await call(world, "echo_echo", arguments)

    assert result.is_error
    assert told(result)["code"] == "ARGUMENTS_TOO_LARGE"
    assert entry.kind == "refused"
    assert "arguments" not in entry.body
    assert entry.body["argumentsDigest"] == sha256_digest(arguments)
    assert entry.body["argumentsRefused"]["bytes"] == len(canonical_bytes(arguments))
    assert len(canonical_bytes(entry.body)) < 1000
    assert world.received == []
    assert world.verifies()


async def test_arguments_of_exactly_max_arguments_bytes_go_through_and_one_byte_more_is_refused(
    tmp_path: Path,
) -> None:
    fits = {"text": "x" * 100}
    limit = len(canonical_bytes(fits))
    async with opened(tmp_path, max_arguments_bytes=limit) as world:
        through, _ = await call(world, "echo_echo", fits)
        refused, entry = await call(world, "echo_echo", {"text": "x" * 101})

        assert not through.is_error
        assert told(refused)["code"] == "ARGUMENTS_TOO_LARGE"
        assert entry.body["argumentsRefused"]["bytes"] == limit + 1
        assert world.received == [fits]
        assert world.verifies()


def nested(depth: int) -> dict[str, Any]:
    """Arguments whose deepest value sits ``depth`` levels below the arguments object."""
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return {"deep": value}


async def test_arguments_nested_deeper_than_64_are_refused_and_64_go_through(world: World) -> None:
    through, _ = await call(world, "echo_echo", nested(64))
    refused, entry = await call(world, "echo_echo", nested(65))

    assert not through.is_error
    assert told(refused)["code"] == "ARGUMENTS_TOO_DEEP"
    assert entry.body["argumentsRefused"]["path"] == "/deep" + "/0" * 64
    assert entry.body["argumentsRefused"]["textDigest"] == text_digest(nested(65))
    assert world.received == [nested(64)]
    assert world.verifies()


async def test_a_refused_call_leaves_the_run_usable_and_its_retry_with_fixed_arguments_goes_through(
    world: World,
) -> None:
    refused, first = await call(world, "chain_put", {"key": "k", "value": "v", "n": 2**60})
    made, second = await call(world, "chain_put", {"key": "k", "value": "v"})

    assert told(refused)["code"] == "ARGUMENTS_NOT_CANONICAL"
    assert not made.is_error
    assert [first.kind, second.kind] == ["refused", "call"]
    assert second.body["intake"]["status"] == "verified"
    assert world.chain_values() == {"k": "v"}
    assert world.verifies()


async def test_a_journal_object_over_max_journal_bytes_is_kept_as_size_and_digest_and_the_call_journaled(
    tmp_path: Path,
) -> None:
    async with opened(tmp_path, max_journal_bytes=2048) as world:
        result, entry = await call(world, "chain_put", {"key": "k", "value": "v" * 3000})

        assert not result.is_error
        assert result.meta["hatp/recorder"]["entry"] == entry.id
        assert "compensationToken" not in result.meta["hatp/journal"]
        assert world.chain_values() == {"k": "v" * 3000}
        assert entry.kind == "call"
        assert entry.body["intake"]["status"] == "unresolved"
        assert entry.body["intake"]["kind"] == "unknown"
        kept = entry.body["journal"]
        assert set(kept) == {"rejected", "bytes", "digest"}
        assert kept["bytes"] > 2048
        assert len(canonical_bytes(entry.body)) < 2048 + len(canonical_bytes(entry.body["arguments"]))
        assert world.verifies()


async def test_a_journal_object_within_max_journal_bytes_is_kept_whole(tmp_path: Path) -> None:
    async with opened(tmp_path, max_journal_bytes=DEFAULT_MAX_ARGUMENTS_BYTES) as world:
        _, entry = await call(world, "chain_put", {"key": "k", "value": "v" * 3000})

        assert entry.body["intake"]["status"] == "verified"
        assert "compensationTokenDigest" in entry.body["journal"]


async def test_a_host_meta_the_record_cant_hold_is_kept_as_rejected_and_the_call_goes_through(
    world: World,
) -> None:
    _, plain = await call(world, "echo_echo", {"n": 1}, meta={"hatp/host": {"uses": ["e1"]}})
    big_int, odd = await call(world, "echo_echo", {"n": 2}, meta={"hatp/host": {"uses": ["e1"], "n": 2**60}})
    _, not_object = await call(world, "echo_echo", {"n": 3}, meta={"hatp/host": "e1"})
    _, oversize = await call(world, "echo_echo", {"n": 4}, meta={"hatp/host": {"uses": ["e" * 16_000] * 5}})

    assert plain.body["host"] == {"uses": ["e1"]}
    assert not big_int.is_error
    assert set(odd.body["host"]) == {"rejected"}
    assert set(not_object.body["host"]) == {"rejected"}
    assert set(oversize.body["host"]) == {"rejected"}
    assert [call["n"] for call in world.received] == [1, 2, 3, 4]
    assert world.verifies()


async def test_a_refused_call_keeps_the_host_meta_it_came_with(world: World) -> None:
    _, entry = await call(world, "echo_echo", {"n": 2**60}, meta={"hatp/host": {"uses": ["e7"]}})

    assert entry.kind == "refused"
    assert entry.body["host"] == {"uses": ["e7"]}


@pytest.mark.parametrize("key", ["max_arguments_bytes", "max_journal_bytes"])
def test_a_limit_that_is_not_a_positive_number_of_bytes_is_refused_at_start(tmp_path: Path, key: str) -> None:
    config = tmp_path / "recorder.toml"
    config.write_text(f'[recorder]\n{key} = 0\n[servers.plain]\ncommand = "plain"\n')

    with pytest.raises(ConfigError):
        load_config(config)


def test_the_limits_default_to_4_mib_and_are_read_from_the_recorder_table(tmp_path: Path) -> None:
    config = tmp_path / "recorder.toml"
    config.write_text('[recorder]\nmax_journal_bytes = 1000\n[servers.plain]\ncommand = "plain"\n')

    section = load_config(config).recorder

    assert (section.max_arguments_bytes, section.max_journal_bytes) == (DEFAULT_MAX_ARGUMENTS_BYTES, 1000)
