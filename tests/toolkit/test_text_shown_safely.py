"""_shared/text.py: text someone else wrote is one line, with nothing that acts on a terminal."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hatp_journal._shared.text import BIDI_CONTROLS, shown, shown_lines, unsafe


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
