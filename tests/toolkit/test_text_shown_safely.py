"""_shared/text.py: text someone else wrote is one line, with nothing that acts on a terminal."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from hatp_journal._shared.text import (
    BIDI_CONTROLS,
    HIDDEN_IN_JSON,
    json_for_people,
    shown,
    shown_lines,
    unsafe,
)


def test_line_breaks_ansi_escapes_and_bidi_overrides_are_written_as_visible_escapes() -> None:
    text = "ok\n  step 2\r\x1b[2J\x1b]8;;http://x\x07\u009b31m\u202egpj.exe\u2066\u2028\u2029\x7f\t\x00"

    assert shown(text) == (
        "ok\\n  step 2\\r\\x1b[2J\\x1b]8;;http://x\\x07\\x9b31m\\u202egpj.exe\\u2066\\u2028\\u2029\\x7f\\t\\x00"
    )


def test_accents_cjk_emoji_and_joined_emoji_are_left_as_written() -> None:
    text = "Zoë 会议 🎉 👩‍💻 → done"

    assert shown(text) == text


def test_each_line_is_made_safe_before_the_lines_are_joined() -> None:
    assert shown_lines(["head", "a\nb"]) == "head\na\\nb"


@settings(max_examples=200)
@given(st.text())
def test_whatever_is_written_becomes_one_line_without_a_character_that_acts_on_a_terminal(text: str) -> None:
    safe = shown(text)

    assert not any(unsafe(char) for char in safe)
    assert not BIDI_CONTROLS & set(safe)
    assert len(safe.splitlines()) <= 1


def test_json_for_people_escapes_controls_format_characters_and_separators_and_keeps_the_rest_readable() -> (
    None
):
    value = {"who": "Zoë 会议 🎉", "x\u202e": "a\x1b[2J\u009b\x7f\u2028\u2029\u200b\ufeff\U000e0041\n"}

    printed = json_for_people(value, indent=2)

    assert printed == (
        '{\n  "who": "Zoë 会议 🎉",\n'
        '  "x\\u202e": "a\\u001b[2J\\u009b\\u007f\\u2028\\u2029\\u200b\\ufeff\\udb40\\udc41\\n"\n}'
    )
    assert json.loads(printed) == value


def test_json_for_people_writes_a_lone_surrogate_as_an_escape_that_reads_back_as_it() -> None:
    printed = json_for_people(["\ud800", "\udfff x"])

    assert printed == '["\\ud800", "\\udfff x"]'
    assert json.loads(printed) == ["\ud800", "\udfff x"]
    printed.encode("utf-8")  # printable on a UTF-8 terminal: no lone surrogate left in it


EVERY_CHARACTER = st.text(st.characters(blacklist_categories=()))
"""Any text, lone surrogates included."""
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | EVERY_CHARACTER,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(EVERY_CHARACTER, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200)
@given(JSON_VALUES, st.sampled_from([None, 2]))
def test_json_for_people_reads_back_as_the_same_value_with_no_hidden_character(
    value: object, indent: int | None
) -> None:
    printed = json_for_people(value, indent=indent)

    assert json.loads(printed) == value
    assert [c for c in printed if c != "\n" and unicodedata.category(c) in HIDDEN_IN_JSON] == []
