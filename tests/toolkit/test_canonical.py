"""The fast canonical road writes exactly what the ``rfc8785`` reference writes, or refuses alike."""

from __future__ import annotations

import enum
import json
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from hatp_journal._shared.canonical import canonical_and_plain, canonical_bytes

SAFE = 2**53 - 1

# Text from every plane, surrogates included, with control characters and the escapes favoured.
TEXT = st.text(
    st.one_of(
        st.characters(codec=None, categories=None),
        st.sampled_from(['"', "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028"]),
        st.sampled_from(["\ue000", "\U0001f600", "\uffff", "\U00010000", "\ud800", "\udfff"]),
    ),
    max_size=12,
)
KEYS = st.one_of(TEXT, st.text("abcXYZ_-09", max_size=6))
NUMBERS = st.one_of(
    st.integers(-SAFE, SAFE),
    st.integers(),  # beyond 2^53 too: refused by both
    st.floats(),  # NaN and infinities too: refused by both
    st.sampled_from([0.0, -0.0, 1.0, 1e21, 1e-7, 5e-324, 2.0**53, 123456789.125]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(KEYS, children, max_size=5)),
    max_leaves=30,
)


def outcome(encode: Any, value: Any) -> tuple[str, Any]:
    """The bytes written, or the type of the error raised."""
    try:
        return "bytes", encode(value)
    except Exception as error:  # noqa: BLE001  (the type of any refusal is what is compared)
        return "refused", type(error)


def same_json(left: Any, right: Any) -> bool:
    """Equal, and of the very same types all the way down (``1 == 1.0 == True`` is not enough)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


@settings(max_examples=500)
@given(JSON)
def test_the_fast_road_writes_the_reference_bytes_or_refuses_alike(value: Any) -> None:
    assert outcome(canonical_bytes, value) == outcome(rfc8785.dumps, value)
    written = outcome(canonical_and_plain, value)
    if written[0] == "bytes":
        data, plain = written[1]
        assert data == canonical_bytes(value)
        if plain:  # a value that took the fast road is exactly what its bytes parse back to
            assert same_json(json.loads(data), value)


class Stage(enum.StrEnum):
    WON = "Won"


class Count(enum.IntEnum):
    ONE = 1


def test_values_the_fast_road_leaves_to_the_reference() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    deep: Any = "leaf"
    for _ in range(200):
        deep = {"d": [deep]}
    odd: list[Any] = [
        {1: "an integer key"},
        {None: "a null key"},
        {"é": 1, "z": 2, "\U0001f600": 3, "\ue000": 4},  # UTF-16 order differs from code points
        (1, "a tuple"),
        {"stage": Stage.WON, "count": Count.ONE},
        {"big": 2**53, "small": -(2**53)},
        {"float": 1.5, "integral": 3.0},
        {"lone": "\ud800"},
        {"set": {1, 2}},
        deep,
    ]
    for value in odd:
        assert outcome(canonical_bytes, value) == outcome(rfc8785.dumps, value), value
    assert outcome(canonical_bytes, cyclic)[0] == "refused"


def test_values_that_parse_back_different_are_not_called_plain() -> None:
    for value in ({"whole": 2.0}, {"pair": (1, 2)}, {"stage": Stage.WON}, {"é": 1}):
        _, plain = canonical_and_plain(value)
        assert not plain, value
    _, plain = canonical_and_plain({"n": 1, "text": "Proposal → Won", "list": [True, None, -(2**53 - 1)]})
    assert plain
