"""The commands' aligned columns: every column starts at the same place on every line."""

from __future__ import annotations

from hatp_journal.recorder.cli.columns import aligned


def test_each_column_starts_at_the_same_place_on_every_line() -> None:
    lines = aligned([["run_a/e13", "review", "mailed to dana@acme.com"], ["run_a/e4", "escalation", "x"]])

    assert lines == ["run_a/e13  review      mailed to dana@acme.com", "run_a/e4   escalation  x"]


def test_a_column_empty_on_every_line_leaves_no_gap_and_lines_end_without_blanks() -> None:
    lines = aligned([["e1", "", "call", ""], ["e2", "", "plan", ""]], indent="  ")

    assert lines == ["  e1  call", "  e2  plan"]
    assert aligned([]) == []
