"""The shared file reader refuses folders, empty, too large, not UTF-8 and too deeply nested files."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hatp_journal._shared.files import (
    MAX_KEY_BYTES,
    MAX_NESTING,
    MAX_TEXT_BYTES,
    FileCode,
    FileProblem,
    check_nesting,
    read_bytes,
    read_text,
    too_deep,
)


def problem_reading(path: Path) -> FileProblem:
    with pytest.raises(FileProblem) as caught:
        read_text(path)
    return caught.value


@pytest.mark.parametrize(
    ("content", "code", "line"),
    [
        (None, FileCode.NOT_A_FILE, None),
        (b"", FileCode.EMPTY, None),
        (b"\xef\xbb\xbf \n\t\n", FileCode.EMPTY, None),
        (b" " * (MAX_TEXT_BYTES + 1), FileCode.TOO_LARGE, None),
        (b'{\n  "a": "caf\xe9"\n}\n', FileCode.NOT_UTF8, 2),
        (b'\xef\xbb\xbf{\n\n"\xc3"}', FileCode.NOT_UTF8, 3),
    ],
    ids=["folder", "empty", "only-a-bom-and-blanks", "too-large", "latin-1", "cut-sequence-after-a-bom"],
)
def test_a_file_that_cannot_be_read_as_text_is_refused_with_its_code_and_line(
    tmp_path: Path, content: bytes | None, code: FileCode, line: int | None
) -> None:
    path = tmp_path / "file.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)

    problem = problem_reading(path)

    assert (problem.code, problem.line, problem.path) == (code, line, str(path))
    assert str(problem).startswith(f"{path}:{line}:" if line else f"{path}: ")


def test_the_offset_of_a_byte_that_is_not_utf8_counts_from_the_start_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"\xef\xbb\xbfab\ncd\xff")

    problem = problem_reading(tmp_path / "f")

    assert (problem.line, problem.column) == (2, 3)
    assert "offset 8" in problem.message


def test_a_missing_file_and_a_path_through_a_file_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")

    assert problem_reading(tmp_path / "absent").code == FileCode.MISSING
    assert problem_reading(tmp_path / "plain" / "inside").code == FileCode.CANNOT_READ


def test_a_byte_order_mark_is_dropped_and_the_text_read(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"\xef\xbb\xbf{}\n")

    assert read_text(tmp_path / "f") == "{}\n"


def test_a_key_file_is_held_to_its_own_smaller_limit(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"-" * (MAX_KEY_BYTES + 1))

    with pytest.raises(FileProblem) as caught:
        read_bytes(tmp_path / "k", limit=MAX_KEY_BYTES)

    assert caught.value.code == FileCode.TOO_LARGE


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_at_the_nesting_limit_passes_and_one_level_more_is_refused_at_its_bracket() -> None:
    check_nesting(nested(MAX_NESTING), "f.json", syntax="json")
    text = '{"a":\n' + nested(MAX_NESTING) + "}"

    with pytest.raises(FileProblem) as caught:
        check_nesting(text, "f.json", syntax="json")

    assert (caught.value.code, caught.value.line, caught.value.column) == (FileCode.TOO_DEEP, 2, MAX_NESTING)


def test_the_check_refuses_nesting_the_standard_parser_would_die_in() -> None:
    text = nested(100_000)
    with pytest.raises(RecursionError):
        json.loads(text)

    with pytest.raises(FileProblem) as caught:
        check_nesting(text, "f.json", syntax="json")

    assert caught.value.code == FileCode.TOO_DEEP


@pytest.mark.parametrize(
    ("syntax", "text"),
    [
        ("json", json.dumps({"a": "[" * 100, "b": '{\\"' * 100})),
        ("json", '"' + "[" * 100),  # an unterminated string: the parser's to report
        ("toml", 'a = "[[[["\n' * 100),
        ("toml", "a = '[[[['\nb = '''\n" + "[" * 100 + "\n'''\n"),
        ("toml", 'a = """\n' + '{\\"""' * 100 + '\n"""\n'),
        ("toml", "# [[[[[[[[[[[[[[[\n" * 100),
    ],
    ids=["json-strings", "json-unterminated", "toml-strings", "toml-literal", "toml-multiline", "comments"],
)
def test_brackets_in_strings_and_comments_do_not_count(syntax: Any, text: str) -> None:
    check_nesting(text, "f", syntax=syntax, limit=3)


def test_toml_nested_only_by_dotted_keys_is_found_in_its_data() -> None:
    data = tomllib.loads("a." + ".".join(["b"] * 10_000) + " = 1\n")

    found = too_deep(data)

    assert found is not None
    assert (found[:3], len(found)) == (("a", "b", "b"), MAX_NESTING + 1)
    assert too_deep({"a": [{"b": 1}]}) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="[]{}ab"), inner, max_size=3)
    ),
    max_leaves=30,
)


def depth_of(value: Any) -> int:
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        return 1 + max((depth_of(item) for item in items), default=0)
    return 0


@given(value=json_values, limit=st.integers(min_value=1, max_value=6), indent=st.sampled_from([None, 1]))
def test_the_json_check_refuses_exactly_what_nests_deeper_than_the_limit(
    value: Any, limit: int, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent)
    try:
        check_nesting(text, "f.json", syntax="json", limit=limit)
        refused = False
    except FileProblem:
        refused = True

    assert refused == (depth_of(value) > limit)


def deepest_by_counting(text: str) -> int:
    """The nesting as the exact scan counts it: strings skipped, a stray closer ignored."""
    depth = deepest = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':  # a string ends at its quote, or unterminated at its line
            index += 1
            while index < len(text) and text[index] not in '"\n':
                if text[index] == "\\" and text[index + 1 : index + 2] in ("", "\n"):
                    break  # an escape never takes the newline: the string ended before it
                index += 2 if text[index] == "\\" else 1
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
        index += 1
    return deepest


@given(text=st.text(alphabet='[]{}"\\a\n', max_size=40), limit=st.integers(min_value=1, max_value=5))
@example(text='"\\\n[[', limit=1)
@example(text='"\\"[[', limit=1)
def test_broken_json_is_refused_exactly_when_its_brackets_nest_too_deep(text: str, limit: int) -> None:
    try:
        check_nesting(text, "f.json", syntax="json", limit=limit)
        refused = False
    except FileProblem:
        refused = True

    assert refused == (deepest_by_counting(text) > limit)
