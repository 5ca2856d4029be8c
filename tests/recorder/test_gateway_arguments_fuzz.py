"""Fuzzing what an agent's arguments can do to the journal (issue 13, "Agent input that breaks
journaling").

Whatever arguments reach ``Recorder.handle`` (integers of any size, NaN and Infinity, lone
surrogates in keys and values, keys that are not strings, values that are not JSON, nesting
around the depth limit, sizes around ``max_arguments_bytes``), the call never raises and adds
exactly one entry: a ``call`` whose arguments are kept as sent and reached the tool server, or a
``refused`` one with a stable code that reached nothing. The record verifies afterwards.
Hypothesis runs derandomized, so every run tries the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from arguments_world import opened
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hatp_journal.recorder.gateway.arguments import MAX_DEPTH, _iterative_text, as_text, check_arguments
from hatp_journal.recorder.record import UnknownEntry

LIMIT = 2048
REFUSALS = {"ARGUMENTS_NOT_CANONICAL", "ARGUMENTS_TOO_DEEP", "ARGUMENTS_TOO_LARGE"}

PLAIN_TEXT = st.text(max_size=8)
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=8)
"""Any code points, lone surrogates included."""

PLAIN_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53 - 1), 2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    PLAIN_TEXT,
)
ANY_SCALARS = st.one_of(
    PLAIN_SCALARS,
    st.integers(),
    st.sampled_from([2**53, -(2**53), 10**40, float("nan"), float("inf"), float("-inf")]),
    ANY_TEXT,
    st.sampled_from(["\ud800", "a\udfffb", "\ud83d\ude00"]),
    st.binary(max_size=3),
    st.frozensets(st.integers(0, 3), max_size=2),
)


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth - 1):
        value = [value]
    return value


def arguments(scalars: st.SearchStrategy[Any], keys: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Argument objects of ``scalars`` under ``keys``."""
    trees = st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3)
    )
    return st.dictionaries(keys, trees, max_size=4)


AT_THE_LIMITS = st.one_of(
    st.integers(MAX_DEPTH - 1, MAX_DEPTH + 1).map(lambda depth: {"deep": nested(depth)}),
    # {"text":"…"} is 11 bytes around the text: these straddle LIMIT.
    st.integers(LIMIT - 12, LIMIT - 10).map(lambda n: {"text": "x" * n}),
)
ARGUMENTS = st.one_of(
    arguments(PLAIN_SCALARS, PLAIN_TEXT),
    arguments(PLAIN_SCALARS, PLAIN_TEXT),
    arguments(ANY_SCALARS, st.one_of(ANY_TEXT, st.integers(-2, 2))),
    AT_THE_LIMITS,
)
"""Half plain JSON, a third anything an agent (or a bug in-process) could hand over, and some
right at the depth and size limits."""


def test_any_arguments_through_handle_never_raise_and_add_exactly_one_entry(tmp_path: Path) -> None:
    with (
        start_blocking_portal() as portal,
        # No retry window: the same arguments twice are two calls here (docs/recorder.md, retries).
        portal.wrap_async_context_manager(
            opened(tmp_path, max_arguments_bytes=LIMIT, retry_window_seconds=0)
        ) as world,
    ):
        refused_codes: set[str] = set()
        journaled = [0]  # entries so far; an entry's id is e<seq>

        @settings(
            max_examples=200,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(arguments=ARGUMENTS)
        def one_call(arguments: dict[str, Any]) -> None:
            reached = len(world.received)

            result = portal.call(world.recorder.handle, "echo", "echo", arguments)

            journaled[0] += 1
            entry = world.store.entry(world.run, f"e{journaled[0]}")
            with pytest.raises(UnknownEntry):
                world.store.entry(world.run, f"e{journaled[0] + 1}")
            if entry.kind == "refused":
                assert result.is_error
                assert result.structured_content is not None
                assert result.structured_content["code"] == entry.body["code"]
                assert entry.body["code"] in REFUSALS
                assert "arguments" not in entry.body
                assert len(world.received) == reached
                refused_codes.add(entry.body["code"])
            else:
                assert entry.kind == "call"
                assert entry.body["arguments"] == arguments
                assert world.received[reached:] == [arguments]

        one_call()

        assert refused_codes == REFUSALS
        assert world.verifies()


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(st.characters(exclude_categories=()))
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(st.characters(exclude_categories=())), inner, max_size=3)
    ),
)


@settings(max_examples=500, derandomize=True, database=None, deadline=None)
@given(value=JSON_VALUES)
def test_the_iterative_writer_writes_what_json_dumps_writes_for_anything_parsed_from_json(value: Any) -> None:
    # textDigest covers this text; the iterative writer takes over where json.dumps can't go (depth).
    expected = json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))

    assert _iterative_text(value) == expected
    assert as_text(value) == expected


def test_arguments_too_deep_for_any_recursive_writer_still_get_a_text_digest() -> None:
    deep = {"deep": nested(50_000)}

    checked = check_arguments(deep, LIMIT)

    assert checked.refusal is not None
    assert checked.refusal.code == "ARGUMENTS_TOO_DEEP"
    text = "[" * 49_999 + "0" + "]" * 49_999
    assert checked.refusal.kept["argumentsRefused"]["bytes"] == len('{"deep":}') + len(text)
