"""Fuzzing the Recorder's intake checks (protocol.md §8; issue 4, "Bad input").

Whatever a downstream puts in a result's ``_meta`` (huge, deeply nested, duplicate keys, NaN,
integers beyond 2^53, control and bidi characters, wrong types, a genuine journal object with one
field changed), intake returns a verdict without raising, and only an object whose receipt
genuinely vouches for it and for the call is ``verified``. Hypothesis runs derandomized, so every
run tries the same inputs: ``take_in`` sees about 10,500 of them across the properties below, and
``bounded`` is also tried directly on about 950 values of its own.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import kv_server

from hatp_journal._shared.canonical import canonical_bytes
from hatp_journal.recorder.gateway.replies import for_agent as _for_agent
from hatp_journal.recorder.gateway.replies import result_members
from hatp_journal.recorder.intake.journal_objects import (
    MAX_DEPTH,
    MAX_NODES,
    MAX_STRING,
    Intake,
    bounded,
    take_in,
)
from hatp_journal.recorder.intake.tokens import BAD_JOURNAL
from hatp_journal.recorder.record import Entry
from hatp_journal.recorder.record.bodies import _holds_token as holds_token
from hatp_journal.toolkit.signing import SigningKey, VerifyKey, b64url_decode
from hatp_journal.toolkit.testing import JournalHarness
from hatp_journal.toolkit.wire import META_KEY, Receipt

DeclaredKind = Literal["compensate", "none", "unknown", "read"]
JsonPath = tuple[str | int, ...]
Claim = tuple[bytes, str, str, str, bytes]


def fuzz(examples: int) -> settings:
    """Hypothesis settings for these properties: derandomized, no example database, no deadline."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )


# -- the genuine object ------------------------------------------------------------------------


@dataclass(frozen=True)
class Genuine:
    """A journal object exactly as a journal-aware server signed it, and the call it answers."""

    journal: dict[str, Any]
    tool: str
    arguments: dict[str, Any]
    keys: dict[str, VerifyKey]

    def take(self, meta: Any, declared_kind: DeclaredKind = "compensate") -> Intake:
        """Take in ``meta`` as the ``_meta`` of this call's result."""
        return take_in(
            meta, tool=self.tool, arguments=self.arguments, server_keys=self.keys, declared_kind=declared_kind
        )

    def judge(self, journal: Any) -> Intake:
        """Take in ``journal`` as the journal object of this call's result."""
        return self.take({META_KEY: journal, "io.modelcontextprotocol/serverInfo": {"name": "kv"}})

    def copy(self) -> dict[str, Any]:
        """A fresh deep copy of the signed object (it is small, plain JSON)."""
        copied: dict[str, Any] = json.loads(json.dumps(self.journal))
        return copied

    @functools.cached_property
    def claim(self) -> Claim:
        """What the genuine receipt vouches for."""
        claim = claim_of(self.journal)
        assert claim is not None
        return claim

    @functools.cached_property
    def paths(self) -> list[JsonPath]:
        """Every value inside the object, by path (the object itself excluded)."""
        return [path for path, _ in walk(self.journal) if path]

    @functools.cached_property
    def object_paths(self) -> list[JsonPath]:
        """Every JSON object inside the object, the object itself included."""
        return [path for path, value in walk(self.journal) if isinstance(value, dict)]


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Genuine:
    """A second ``put`` on one key, so the object carries ``before``, ``version`` and a token."""
    store = tmp_path_factory.mktemp("kv") / "kv.db"
    harness = JournalHarness(*kv_server.TOOLS, store=store, server="kv://store")
    harness.call("put", key="D-881", value="Proposal")
    arguments = {"key": "D-881", "value": "Won"}
    call = harness.call("put", **arguments)
    harness.journal.engine.dispose()
    return Genuine(call.journal.wire(), "put", arguments, harness.keys)


def claim_of(journal: Any) -> Claim | None:
    """What a receipt vouches for, however its envelope is spelled: the signed body, the algorithm,
    the key, the time and the signature bytes. None when there is no readable receipt."""
    if not isinstance(journal, dict) or not isinstance(journal.get("receipt"), dict):
        return None
    try:
        receipt = Receipt.model_validate(journal["receipt"])
        body = canonical_bytes({key: value for key, value in journal.items() if key != "receipt"})
        return body, receipt.alg, receipt.kid, receipt.issued_at, b64url_decode(receipt.sig)
    except (ValueError, RecursionError):
        return None


def walk(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every (path, value) of a small plain JSON value, parents before children."""
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from walk(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from walk(child, (*path, index))


def value_at(journal: Any, path: JsonPath) -> Any:
    """The value at ``path``."""
    for step in path:
        journal = journal[step]
    return journal


def parent_of(journal: Any, path: JsonPath) -> Any:
    """The container holding the value at ``path``."""
    return value_at(journal, path[:-1])


# -- checks shared by every property -----------------------------------------------------------


def assert_the_record_can_hold(intake: Intake) -> None:
    """The gateway writes ``intake.wire()`` into the Run Record, and the raw object too when
    ``bounded`` calls it plain JSON: both must have RFC 8785 canonical bytes, or the append fails
    and the entry is lost."""
    canonical_bytes(intake.wire())
    if intake.raw is not None and bounded(intake.raw) is None:
        canonical_bytes(intake.raw)


def assert_not_verified(intake: Intake) -> None:
    """An object that is not genuinely signed is kept as ``unresolved`` and treated as ``unknown``."""
    assert intake.status == "unresolved"
    assert intake.kind == "unknown"
    assert intake.journal is None
    assert isinstance(intake.reason, str)
    assert intake.reason


def assert_verified_only_if_genuine(intake: Intake, journal: Any, genuine: Genuine) -> None:
    """``verified`` only for the genuine claim; anything else is unresolved."""
    assert_the_record_can_hold(intake)
    if intake.status == "verified":
        assert claim_of(journal) == genuine.claim
        assert intake.kind == "compensate"
    else:
        assert_not_verified(intake)


# -- strategies --------------------------------------------------------------------------------

CONTROL_AND_BIDI = list(
    "\x00\x01\x07\x08\t\n\r\x1b\x7f\x85\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2066\u2067\u2068\u2069\u2028\u2029\ufeff\ufffe\uffff\U0010ffff"
)
LONE_SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
ORDINARY = [*'aZ09 -_./:"\\', "é", "€", "中", "😀", "\u0301", "\U0001d11e"]
FIELD_NAMES = [
    *("protocol", "server", "read", "undo", "compensationToken", "effect", "reason", "remedy", "receipt"),
    *("kind", "undoBy", "via", "sideEffects", "cost", "summary", "resource", "version", "before"),
    *("uses", "amount", "fields", "alg", "kid", "sig", "issuedAt", "currency", "compensation_token"),
    *("issued_at", "undo_by", "side_effects", "changes", "field", "after", META_KEY),
]
ODD_NUMBERS: list[int | float] = [
    *(2**53 - 1, 2**53, 2**53 + 1, -(2**53) + 1, -(2**53), -(2**53) - 1, 2**63, 2**64 + 1, 10**400),
    *(float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1.7976931348623157e308, 1e-7, 1e21),
]

# Sampled rather than drawn from all of Unicode: cheaper per example, and every class that matters
# (ordinary, combining, astral, control, bidi, noncharacter, lone surrogate) comes up often.
characters = st.sampled_from(ORDINARY + CONTROL_AND_BIDI + LONE_SURROGATES)
texts = st.text(characters, max_size=12)
keys = st.one_of(texts, st.sampled_from(FIELD_NAMES))
numbers = st.one_of(
    st.integers(),
    st.floats(),
    st.sampled_from(ODD_NUMBERS),
    # More digits than int() will print (4,300): built by map, so Hypothesis never has to repr it.
    st.integers(4_301, 5_000).map(lambda digits: -(10**digits)),
)


def around(limit: int) -> st.SearchStrategy[int]:
    """Sizes just below, at and above a limit, or twice it, one time in four; small sizes otherwise
    (a value at the limit costs intake a full walk, so it is not drawn every time)."""
    small = st.integers(0, 40)
    return st.one_of(
        small, small, small, st.sampled_from([limit - 1, limit, limit + 1, limit + 2, 2 * limit])
    )


def repeated(piece: str, size: int) -> str:
    """A string of exactly ``size`` characters made of ``piece`` (non-empty)."""
    return (piece * (size // len(piece) + 1))[:size]


def nested(depth: int, shape: Literal["dict", "list", "mixed"], leaf: Any) -> Any:
    """``leaf`` wrapped ``depth`` times, built iteratively: a parser could never hand this over,
    an in-process client could."""
    value = leaf
    for level in range(depth):
        wrap_in_object = shape == "dict" or (shape == "mixed" and level % 2 == 0)
        value = {"a": value} if wrap_in_object else [value]
    return value


def keyed(value: Any, size: int) -> dict[str, Any]:
    """A JSON object with ``size`` keys, all holding ``value``."""
    return {f"k{index}": value for index in range(size)}


leaves = st.one_of(st.none(), st.booleans(), numbers, texts)
huge_strings = st.builds(repeated, st.text(characters, min_size=1, max_size=4), around(MAX_STRING))
huge_lists = st.builds(lambda leaf, size: [leaf] * size, leaves, around(MAX_NODES))
huge_objects = st.builds(keyed, leaves, around(MAX_NODES))
huge_keys = st.builds(lambda key, leaf: {key: leaf}, huge_strings, leaves)
deep_values = st.builds(
    nested,
    around(MAX_DEPTH) | st.sampled_from([1_000, 10_000]),
    st.sampled_from(["dict", "list", "mixed"]),
    leaves,
)
oversized = st.one_of(huge_strings, huge_lists, huge_objects, huge_keys, deep_values)
hostile_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(leaves, leaves, oversized),  # about one leaf in three is over a limit
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=6,
)
"""Anything a downstream could put in ``_meta``, over the intake limits sometimes."""

quick_hostile_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(leaves, leaves, huge_strings, huge_keys, deep_values),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=6,
)
"""Hostile values without thousands of members, for properties that try each value many times."""

printable_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(leaves.filter(lambda leaf: not isinstance(leaf, int) or abs(leaf) < 2**64), huge_strings),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)),
    max_leaves=5,
)
"""Values the standard ``json`` module can write, for JSON text with duplicate keys."""

plain_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53) + 1, 2**53 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=8), children, max_size=5),
    ),
    max_leaves=12,
)
"""Small, plain JSON: what a well-behaved server sends."""

declared_kinds: st.SearchStrategy[DeclaredKind] = st.sampled_from(["compensate", "none", "unknown", "read"])


@functools.cache
def journal_like(kid: str, sig: str, issued_at: str) -> st.SearchStrategy[dict[str, Any]]:
    """Objects shaped like a journal object, often carrying the genuine receipt or its key id, so
    they reach model validation and signature checking instead of stopping at a missing field."""
    field_values = st.one_of(texts, leaves, quick_hostile_values)
    receipts = st.fixed_dictionaries(
        {
            "kid": st.one_of(st.just(kid), texts),
            "sig": st.one_of(st.just(sig), texts, huge_strings),
            "issuedAt": st.one_of(st.just(issued_at), texts),
        },
        optional={"alg": st.one_of(st.just("Ed25519"), texts), "extra": field_values},
    )
    undo = st.fixed_dictionaries(
        {"kind": st.one_of(st.sampled_from(["compensate", "none", "unknown"]), field_values)},
        optional={"undoBy": texts, "via": st.sampled_from(["api", "ui"]), "sideEffects": field_values},
    )
    effect = st.fixed_dictionaries(
        {"summary": texts, "resource": texts},
        optional={
            "version": texts,
            "before": texts,
            "uses": field_values,
            "fields": field_values,
            "changes": st.one_of(
                st.lists(
                    st.fixed_dictionaries({"field": texts}, optional={"before": leaves, "after": leaves})
                ),
                field_values,
            ),
        },
    )
    return st.fixed_dictionaries(
        {"server": st.one_of(st.just("kv://store"), field_values)},
        optional={
            "protocol": st.one_of(st.just("hatp-journal/0.3"), field_values),
            "read": st.one_of(st.booleans(), field_values),
            "undo": st.one_of(undo, field_values),
            "compensationToken": st.one_of(texts, field_values),
            "effect": st.one_of(effect, field_values),
            "reason": field_values,
            "receipt": st.one_of(receipts, field_values),
            "unexpected": field_values,
        },
    )


# -- arbitrary _meta ---------------------------------------------------------------------------


def expected_absent_kind(declared: DeclaredKind) -> str:
    """How a result without a journal object is classified: by its declaration, else unknown."""
    return {"read": "read", "none": "none"}.get(declared, "unknown")


def placements(value: Any) -> list[Any]:
    """The same hostile value as the whole ``_meta``, as the journal object, inside one, and beside one."""
    return [
        value,
        {META_KEY: value},
        {META_KEY: {"server": "kv://store", "effect": value}},
        {"io.modelcontextprotocol/serverInfo": value, META_KEY: [value]},
    ]


@fuzz(350)
@given(value=hostile_values, declared=declared_kinds)
def test_any_meta_gets_a_verdict_without_raising_and_is_never_verified(
    genuine: Genuine, value: Any, declared: DeclaredKind
) -> None:
    for meta in placements(value):
        intake = genuine.take(meta, declared)

        assert_the_record_can_hold(intake)
        if not isinstance(meta, dict) or meta.get(META_KEY) is None:
            assert intake.status == "absent"
            assert intake.kind == expected_absent_kind(declared)
        else:
            assert_not_verified(intake)


@fuzz(300)
@given(data=st.data(), declared=declared_kinds)
def test_objects_shaped_like_a_journal_object_are_never_verified(
    genuine: Genuine, data: st.DataObject, declared: DeclaredKind
) -> None:
    receipt = genuine.journal["receipt"]
    journal = data.draw(journal_like(receipt["kid"], receipt["sig"], receipt["issuedAt"]), label="journal")

    intake = genuine.take({META_KEY: journal}, declared)

    assert_the_record_can_hold(intake)
    assert_not_verified(intake)


# -- bounded() ---------------------------------------------------------------------------------


@dataclass
class Size:
    """How big a value is, measured only as far as the limits (so a huge value stays cheap)."""

    nodes: int = 0
    depth: int = 0
    longest: int = 0

    @property
    def within_limits(self) -> bool:
        """Whether ``bounded`` should let it through on size alone."""
        return self.nodes <= MAX_NODES and self.depth <= MAX_DEPTH and self.longest <= MAX_STRING


def measure(value: Any) -> Size:
    """Count values, depth and the longest string or key, iteratively, stopping past a limit."""
    size = Size()
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and size.within_limits:
        item, depth = stack.pop()
        size.nodes += 1
        size.depth = max(size.depth, depth)
        if isinstance(item, dict):
            for key, child in item.items():
                size.longest = max(size.longest, len(key) if isinstance(key, str) else 0)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            size.longest = max(size.longest, len(item))
    return size


def has_canonical_bytes(value: Any) -> bool:
    """Whether RFC 8785 can serialize ``value`` (what the Run Record needs to hash it)."""
    try:
        canonical_bytes(value)
    except ValueError:
        return False
    return True


@fuzz(400)
@given(value=st.one_of(hostile_values, oversized))
def test_bounded_lets_through_exactly_the_small_values_the_record_can_hash(value: Any) -> None:
    for candidate in (value, {"fields": [value]}):
        problem = bounded(candidate)

        assert problem is None or (isinstance(problem, str) and problem)
        fits = measure(candidate).within_limits and has_canonical_bytes(candidate)
        assert (problem is None) == fits


@fuzz(150)
@given(value=plain_values)
def test_bounded_accepts_small_plain_json(value: Any) -> None:
    assert measure(value).within_limits
    assert bounded(value) is None


@pytest.mark.parametrize("shape", ["dict", "list", "mixed"])
def test_ten_thousand_levels_of_nesting_are_rejected_before_parsing(
    genuine: Genuine, shape: Literal["dict", "list", "mixed"]
) -> None:
    deep = nested(10_000, shape, "bottom")
    inside = genuine.copy()
    inside["effect"]["fields"]["value"] = deep

    assert bounded(deep) is not None
    assert_not_verified(genuine.judge(deep))
    assert_not_verified(genuine.judge(inside))


def test_an_object_that_contains_itself_is_rejected_not_walked_forever(genuine: Genuine) -> None:
    loop: dict[str, Any] = genuine.copy()
    loop["effect"]["fields"]["value"] = loop

    assert bounded(loop) is not None
    assert_not_verified(genuine.judge(loop))


@pytest.mark.parametrize(
    "value",
    [2**53, -(2**53), 2**53 + 1, "\ud800", {"\udfff": 1}, float("nan"), float("-inf")],
    ids=["2^53", "-2^53", "2^53+1", "lone-surrogate", "lone-surrogate-key", "nan", "-inf"],
)
def test_values_without_canonical_json_are_not_kept_as_plain_json(value: Any) -> None:
    assert bounded(value) is not None
    assert bounded({"effect": {"fields": {"value": value}}}) is not None


# -- the genuine object, untouched and changed -------------------------------------------------


def test_the_untouched_genuine_object_is_verified(genuine: Genuine) -> None:
    intake = genuine.judge(genuine.copy())

    assert intake.status == "verified"
    assert intake.kind == "compensate"
    assert intake.journal is not None
    assert_the_record_can_hold(intake)


def test_the_genuine_object_is_unresolved_under_a_key_the_recorder_did_not_pin(genuine: Genuine) -> None:
    kid = genuine.journal["receipt"]["kid"]
    impostor = SigningKey.generate().public
    for keys in ({}, {kid: VerifyKey(kid, impostor.key)}, {impostor.kid: impostor}):
        intake = take_in(
            {META_KEY: genuine.copy()},
            tool=genuine.tool,
            arguments=genuine.arguments,
            server_keys=keys,
            declared_kind="compensate",
        )
        assert_not_verified(intake)


WRONG_TYPES: list[Any] = [
    *(None, True, False, 0, -1, 1.5, float("nan"), float("inf"), 2**53, 10**400),
    *("", "x", "\u202e\x00", "\ud800", [], ["x"], {}, {"kind": "compensate"}),
]


def test_a_wrong_type_at_any_field_of_the_genuine_object_is_unresolved(genuine: Genuine) -> None:
    accepted = []
    for path in genuine.paths:
        for wrong in WRONG_TYPES:
            journal = genuine.copy()
            current = parent_of(journal, path)[path[-1]]
            if type(current) is type(wrong) and current == wrong:
                continue
            parent_of(journal, path)[path[-1]] = wrong
            intake = genuine.judge(journal)
            assert_the_record_can_hold(intake)
            if intake.status != "unresolved" or intake.kind != "unknown":
                accepted.append((path, wrong, intake.status))
    assert len(genuine.paths) >= 20
    assert accepted == []


def snake(name: str) -> str:
    """``issuedAt`` → ``issued_at``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def change_one_field(journal: dict[str, Any], path: JsonPath, data: st.DataObject) -> None:
    """Change the value at ``path`` in one of several ways, in place."""
    parent = parent_of(journal, path)
    step = path[-1]
    current = parent[step]
    how = data.draw(st.sampled_from(["replace", "drop", "add", "rename", "edit"]), label="how")
    if how == "drop":
        del parent[step]
    elif how == "add" and isinstance(current, dict):
        current[data.draw(keys.filter(lambda key: key not in current), label="key")] = data.draw(
            quick_hostile_values, label="value"
        )
    elif how == "add" and isinstance(current, list):
        current.append(data.draw(quick_hostile_values, label="value"))
    elif how == "rename" and isinstance(step, str):
        renamed = data.draw(
            st.one_of(st.sampled_from([snake(step), step.upper(), step + " ", "\u200b" + step]), keys),
            label="renamed",
        )
        del parent[step]
        parent[renamed] = current
    elif how == "edit" and isinstance(current, str):
        at = data.draw(st.integers(0, len(current)), label="at")
        char = data.draw(characters, label="char")
        edit = data.draw(st.sampled_from(["insert", "replace", "delete"]), label="edit")
        tail = current[at + 1 :] if edit != "insert" else current[at:]
        middle = "" if edit == "delete" else char
        parent[step] = current[:at] + middle + tail
    else:
        parent[step] = data.draw(st.one_of(quick_hostile_values, plain_values), label="replacement")


@fuzz(300)
@given(data=st.data())
def test_a_genuine_object_with_one_field_changed_is_never_verified(
    genuine: Genuine, data: st.DataObject
) -> None:
    for _ in range(2):
        journal = genuine.copy()
        change_one_field(journal, data.draw(st.sampled_from(genuine.paths), label="path"), data)

        intake = genuine.judge(journal)

        assert_verified_only_if_genuine(intake, journal, genuine)


@fuzz(320)
@given(value=st.one_of(quick_hostile_values, plain_values))
def test_any_value_put_at_any_field_of_the_genuine_object_is_never_verified(
    genuine: Genuine, value: Any
) -> None:
    for path in genuine.paths:
        journal = genuine.copy()
        parent_of(journal, path)[path[-1]] = value

        intake = genuine.judge(journal)

        assert_verified_only_if_genuine(intake, journal, genuine)


@fuzz(200)
@given(
    tool=st.one_of(st.sampled_from(["put", "Put", "put ", "get", "hatp_journal_compensate"]), texts),
    arguments=st.one_of(
        st.dictionaries(
            st.sampled_from(["key", "value", "Key", "extra"]), st.sampled_from(["D-881", "Won", "Lost"])
        ),
        st.dictionaries(st.text(max_size=8), plain_values, max_size=4),
    ),
)
def test_the_genuine_object_answers_only_the_call_it_was_signed_for(
    genuine: Genuine, tool: str, arguments: dict[str, Any]
) -> None:
    intake = take_in(
        {META_KEY: genuine.copy()},
        tool=tool,
        arguments=arguments,
        server_keys=genuine.keys,
        declared_kind="compensate",
    )

    same_call = tool == genuine.tool and canonical_bytes(arguments) == canonical_bytes(genuine.arguments)
    assert (intake.status == "verified") == same_call
    if not same_call:
        assert_not_verified(intake)


# -- duplicate keys in JSON text ---------------------------------------------------------------


def dumps_with_duplicate(
    value: Any, target: JsonPath, key: str, extra: Any, first: bool, here: JsonPath = ()
) -> str:
    """``value`` as JSON text whose object at ``target`` names ``key`` twice: ``extra`` is written
    before the genuine member (``first``) or after it (or simply added when ``key`` is new)."""
    if isinstance(value, list):
        items = [
            dumps_with_duplicate(item, target, key, extra, first, (*here, index))
            for index, item in enumerate(value)
        ]
        return "[" + ",".join(items) + "]"
    if not isinstance(value, dict):
        return json.dumps(value)
    members = [
        (name, dumps_with_duplicate(child, target, key, extra, first, (*here, name)))
        for name, child in value.items()
    ]
    if here == target:
        names = [name for name, _ in members]
        at = names.index(key) + (0 if first else 1) if key in names else len(members)
        members.insert(at, (key, json.dumps(extra)))
    return "{" + ",".join(f"{json.dumps(name)}:{text}" for name, text in members) + "}"


def keep_first(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A parser that keeps the first of duplicate keys, as some do."""
    kept: dict[str, Any] = {}
    for key, value in pairs:
        kept.setdefault(key, value)
    return kept


@fuzz(250)
@given(data=st.data(), first=st.booleans(), extra=printable_values)
def test_duplicate_keys_are_judged_by_the_object_the_parser_keeps(
    genuine: Genuine, data: st.DataObject, first: bool, extra: Any
) -> None:
    target = data.draw(st.sampled_from(genuine.object_paths), label="object")
    existing = list(value_at(genuine.journal, target))
    key = data.draw(st.one_of(st.sampled_from(existing), keys), label="key")
    text = dumps_with_duplicate(genuine.journal, target, key, extra, first)

    for parsed in (json.loads(text), json.loads(text, object_pairs_hook=keep_first)):
        intake = genuine.judge(parsed)

        assert_verified_only_if_genuine(intake, parsed, genuine)
        if has_canonical_bytes(parsed) and canonical_bytes(parsed) == canonical_bytes(genuine.journal):
            assert intake.status == "verified"


# -- a receipt spelled differently from how it was signed --------------------------------------


def respell(receipt: dict[str, Any], how: str) -> None:
    """Spell the same receipt differently: same signature bytes, same key, same time."""
    sig = receipt["sig"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    if how == "padded signature":
        receipt["sig"] = sig + "=="
    elif how == "non-zero padding bits":
        last = alphabet.index(sig[-1])
        receipt["sig"] = sig[:-1] + alphabet[last ^ 0b0001]
    elif how == "line break in signature":
        receipt["sig"] = sig[:40] + "\n\n" + sig[40:] + "=="
    elif how == "alg left out":
        del receipt["alg"]
    elif how == "snake_case issued_at":
        receipt["issued_at"] = receipt.pop("issuedAt")


@pytest.mark.parametrize(
    "how",
    [
        "padded signature",
        "non-zero padding bits",
        "line break in signature",
        "alg left out",
        "snake_case issued_at",
    ],
)
def test_a_receipt_spelled_differently_from_how_it_was_signed_is_not_verified(
    genuine: Genuine, how: str
) -> None:
    journal = genuine.copy()
    respell(journal["receipt"], how)
    assert journal != genuine.journal
    assert claim_of(journal) == genuine.claim

    assert genuine.judge(journal).status == "unresolved"


# -- tokens wherever a server puts them --------------------------------------------------------

TOKEN_RESULTS = int(os.environ.get("HATP_FUZZ_TOKEN_RESULTS", "300"))
"""Results tried by the token property (bench/hostile_data.py runs it with 10,000 and more)."""

TALLY = os.environ.get("HATP_FUZZ_TALLY")
"""A file to add this property's counts to, as JSON lines (bench/hostile_data.py reads it)."""


def containers(value: Any, path: JsonPath = ()) -> Iterator[JsonPath]:
    """Every object and array inside ``value`` (itself included), by path."""
    if isinstance(value, dict | list):
        yield path
        children = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in children:
            yield from containers(child, (*path, key))


def plant(result: dict[str, Any], path: JsonPath, key: str, value: Any) -> None:
    """Put ``value`` into the container at ``path``: as member ``key`` of an object, appended to an array."""
    target = value_at(result, path)
    if isinstance(target, dict):
        target[key] = value
    else:
        target.append(value)


@fuzz(TOKEN_RESULTS)
@given(data=st.data())
def test_a_token_planted_anywhere_in_a_result_reaches_neither_the_record_nor_the_agent(
    genuine: Genuine, data: st.DataObject
) -> None:
    token = genuine.journal["compensationToken"]
    journal = genuine.copy()
    placed_well = data.draw(st.booleans(), label="the genuine object in its place")
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": data.draw(texts, label="text")}],
        "structuredContent": data.draw(plain_values, label="structured"),
        "_meta": {META_KEY: journal if placed_well else data.draw(plain_values, label="meta")},
    }
    how = data.draw(st.sampled_from(["token", "object", "wrapped", "none"]), label="how")
    where = data.draw(st.sampled_from(list(containers(result))), label="where")
    key = data.draw(st.sampled_from(["compensationToken", META_KEY, "x"]), label="key")
    if how == "token":
        plant(result, where, key, {"compensationToken": token})
    elif how == "object":
        plant(result, where, key, genuine.copy())
    elif how == "wrapped":
        result["_meta"][META_KEY] = [genuine.copy()]
    # A new object, or one holding just the token, put in the place itself: there a token is stripped.
    replaced = how in ("token", "object") and where == ("_meta",) and key == META_KEY
    astray_expected = (
        how == "wrapped"
        or (how == "token" and not replaced)
        or (how == "object" and not replaced)
        or isinstance(result["_meta"].get(META_KEY), list)
    )

    members, tokens, astray = result_members(result, genuine.take, "kv", 1 << 20)
    answer = _for_agent(result, "run", "e1") if astray is None else {"code": BAD_JOURNAL, "message": astray}

    recorded = json.dumps({"arguments": {"compensationToken": "the agent's own"}, **members})
    assert token not in recorded
    assert token not in json.dumps(answer)
    assert (astray is not None) == astray_expected, astray
    genuine_in_place = not astray_expected and (placed_well or replaced)
    assert [kept for _, _, kept in tokens] == ([token] if genuine_in_place else [])
    if astray is not None:
        assert members["intake"]["reason"].startswith("BAD_JOURNAL: ")
    # The verifier agrees: no token in what is recorded, and the agent's own argument is none.
    assert not holds_token(Entry.model_construct(kind="call", body=json.loads(recorded)))
    if TALLY:
        with open(TALLY, "a") as tally:
            tally.write(json.dumps({"how": how, "code": BAD_JOURNAL if astray else "kept"}) + "\n")
